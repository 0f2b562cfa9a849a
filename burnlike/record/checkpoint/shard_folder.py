"""A sharded checkpoint's folder, without torch.distributed: the names of its files (one record per
rank, the metadata, the training state), how to tell one, and its training-state record. The DCP
storage that writes and reads the shards is `burnlike.record.checkpoint.dcp`; what only looks at a
folder (`burnlike inspect`, finding the newest checkpoint) needs only this.
"""

from __future__ import annotations

import os
from typing import Any

from burnlike.record.checkpoint.value import decode_value
from burnlike.record.error import RecordError
from burnlike.record.format.location import AnyPath, RemotePath, as_path
from burnlike.record.format.recorder import Recorder

METADATA = ".metadata"  # + the recorder's extension
TRAINING_STATE = "state"  # + the extension: what a training checkpoint holds besides weights and optimizers
FORMAT = "burnlike-dcp/1"


def shard_name(rank: int, extension: str) -> str:
    return f"shard-{rank}.{extension}"


def metadata_path(folder: AnyPath, recorder: Recorder) -> AnyPath:
    return folder / f"{METADATA}.{recorder.file_extension()}"


def training_state_path(folder: AnyPath, recorder: Recorder) -> AnyPath:
    return folder / f"{TRAINING_STATE}.{recorder.file_extension()}"


def write_training_state(folder: AnyPath, checkpoint: dict[str, Any], recorder: Recorder) -> None:
    """The rest of a Lightning checkpoint (loops, callbacks, epoch, counters) beside the shards, one
    record (Lightning's own FSDP strategy torch.saves it: a pickle)."""
    from burnlike.record.checkpoint.lightning_dict import encode_checkpoint

    recorder.record(encode_checkpoint(checkpoint, recorder, full=True), training_state_path(folder, recorder),
                    exact_path=True, durable=True)


def read_training_state(folder: str | os.PathLike[str] | AnyPath) -> dict[str, Any]:
    """A sharded checkpoint's training state (any recorder's format: the file says which)."""
    from burnlike.record.format import registry

    path = as_path(folder)
    found = [p for p in path.iterdir() if p.name.startswith(TRAINING_STATE + ".")] if path.is_dir() else []
    if not found:
        raise RecordError(f"no training state in this sharded checkpoint (expected {TRAINING_STATE}.<ext>)", str(path))
    value = decode_value(registry.sniff(found[0]).load(found[0]), str(found[0]))
    if not isinstance(value, dict):
        raise RecordError("a sharded checkpoint's training state must be a map", str(found[0]))
    return value


def is_sharded_checkpoint(path: str | os.PathLike[str] | AnyPath) -> bool:
    """Whether `path` is a folder holding a sharded checkpoint of this format (any recorder)."""
    folder = as_path(path)
    return folder.is_dir() and any(p.name.startswith(METADATA + ".") for p in folder.iterdir())


def remove_checkpoint_path(path: str | os.PathLike[str] | AnyPath) -> None:
    """Remove a checkpoint, a file or a sharded checkpoint's folder (whole), best effort: a missing
    one is fine, and a link is removed without following it into the folder it names."""
    import shutil

    target = as_path(path)
    if isinstance(target, RemotePath):
        if target.exists():
            target.fs.rm(target.fs_path, recursive=True)
    elif target.is_dir():
        shutil.rmtree(target, ignore_errors=True)
    else:
        target.unlink(missing_ok=True)
