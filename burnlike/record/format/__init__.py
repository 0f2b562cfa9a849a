"""Records, layer 2 — formats: Burn's file recorders (MessagePack, JSON, bincode, each also
gzipped) over one walk of the module tree, and the registry that names them and tells a file's
format from its extension or first bytes.

Built on layer 1 (`burnlike.record.tensor`); knows nothing of training checkpoints.
"""
