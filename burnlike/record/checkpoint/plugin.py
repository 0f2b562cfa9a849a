"""`RecorderCheckpointIO`: Lightning's CheckpointIO plugin writing checkpoints as Burn records.

The whole checkpoint dict is the record item. Model weights (`state_dict` floats) take the
recorder's precision; optimizer state, counters, int tensors, scalars, and the ddp_spawn weight
transport (`.temp.ckpt`) keep their own dtype. Loading never unpickles anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from lightning.fabric.plugins.io.checkpoint_io import CheckpointIO

from burnlike.record.checkpoint.lightning_dict import (
    SPAWN_TRANSPORT,
    MapLocation,
    encode_checkpoint,
    load_checkpoint,
)
from burnlike.record.checkpoint.value import Unstorable
from burnlike.record.error import RecordError
from burnlike.record.format.named_mpk import CompactRecorder
from burnlike.record.format.recorder import Recorder

if TYPE_CHECKING:
    from lightning.pytorch import LightningModule

    LM = TypeVar("LM", bound=LightningModule)


class RecorderCheckpointIO(CheckpointIO):
    """`Trainer(plugins=[RecorderCheckpointIO(CompactRecorder())])`."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.recorder = recorder or CompactRecorder()

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | os.PathLike[str],
                        storage_options: Any | None = None) -> None:
        if storage_options is not None:
            raise TypeError("RecorderCheckpointIO.save_checkpoint: storage_options is not supported")
        target = Path(path)
        item = encode_checkpoint(checkpoint, self.recorder, full=target.name.endswith(SPAWN_TRANSPORT))
        self.recorder.record(item, target, exact_path=True)

    def load_checkpoint(self, path: str | os.PathLike[str], map_location: MapLocation = None,
                        weights_only: bool | None = None) -> dict[str, Any]:
        """Read a checkpoint (any recorder's format; `weights_only` is accepted and moot: nothing
        is ever unpickled). Lightning restores it; tensors are on CPU unless `map_location`."""
        target = Path(path)
        if not target.exists():
            raise FileNotFoundError(f"checkpoint file not found: {target}")
        return load_checkpoint(target, self.recorder, map_location)

    def remove_checkpoint(self, path: str | os.PathLike[str]) -> None:
        Path(path).unlink(missing_ok=True)


def load_lightning_module(module_cls: type[LM], path: str | os.PathLike[str], map_location: MapLocation = None,
                          strict: bool | None = None, recorder: Recorder | None = None, **kwargs: Any) -> LM:
    """`LightningModule.load_from_checkpoint` for recorder checkpoints (Lightning's own bypasses
    plugins and would unpickle). Hyperparameters saved as `Unstorable` markers (an nn.Module or a
    partial in hparams) must be passed again as keyword arguments, which override saved ones."""
    from lightning.pytorch.core.saving import _load_state

    checkpoint = load_checkpoint(path, recorder, map_location)
    hparams = checkpoint.get("hyper_parameters") or {}
    missing = [k for k, v in hparams.items() if isinstance(v, Unstorable) and k not in kwargs] \
        if isinstance(hparams, dict) else []
    if missing:
        raise RecordError(f"hyperparameters {missing} were not storable without pickle; pass them as keyword "
                          f"arguments: load_lightning_module({getattr(module_cls, '__name__', module_cls)}, path, "
                          f"{missing[0]}=...)", path, f"hyper_parameters.{missing[0]}")
    return cast("LM", _load_state(module_cls, checkpoint, strict=strict, **kwargs))


def load_from_checkpoint(module_cls: type[LM], checkpoint_path: str | os.PathLike[str],
                         map_location: MapLocation = None, strict: bool | None = None, **kwargs: Any) -> LM:
    """Lightning's `Cls.load_from_checkpoint(path, map_location, strict, **kwargs)`, spelled as a
    function: `load_from_checkpoint(MyModule, "epoch=3-step=100.ckpt")`."""
    return load_lightning_module(module_cls, checkpoint_path, map_location=map_location, strict=strict, **kwargs)
