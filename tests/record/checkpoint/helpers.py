"""Shared by the tests of `burnlike.record.checkpoint`: a training checkpoint saved around a given
`state_dict`, and `Opaque`, an object no checkpoint can store without pickle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from burnlike.record import DefaultRecorder, RecorderCheckpointIO
from tests.record.helpers import PL_VERSION


def save_checkpoint(path: Path, state_dict: Any, **extra: Any) -> Path:
    """A checkpoint at `path` (the default recorder) holding `state_dict` and `extra` keys."""
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
        {"state_dict": state_dict, "pytorch-lightning_version": PL_VERSION, **extra}, path)
    return path


class Opaque:
    """Not storable without pickle: encoded as an `Unstorable` marker."""
