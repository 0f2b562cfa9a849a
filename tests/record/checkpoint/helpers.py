"""TODO: docstring."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from burnlike.record import (
    DefaultRecorder,
    RecorderCheckpointIO,
)
from tests.record.helpers import PL_VERSION


def save_checkpoint(path: Path, state_dict: Any, **extra: Any) -> Path:
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
        {"state_dict": state_dict, "pytorch-lightning_version": PL_VERSION, **extra}, path)
    return path


class Opaque:
    pass
