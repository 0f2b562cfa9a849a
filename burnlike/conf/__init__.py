"""burnlike's Hydra config groups, importable as `pkg://burnlike.conf` from any repo's search path."""
