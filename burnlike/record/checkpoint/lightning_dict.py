"""Lightning checkpoint dicts as Burn record items, without Lightning: encode one for a recorder,
read one back (`load_checkpoint`, with torch.load's `map_location`).

Model weights (`state_dict` floats) take the recorder's precision; optimizer state, counters, int
tensors, scalars, and the ddp_spawn weight transport (`.temp.ckpt`) keep their own dtype.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias

import torch

from burnlike.record.checkpoint.value import decode_value, encode_value
from burnlike.record.error import RecordError
from burnlike.record.format import registry
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.precision import storage_dtype

SPAWN_TRANSPORT = ".temp.ckpt"
# torch.load's map_location: a device, a {from: to} map, or a callable(tensor, location)
MapLocation: TypeAlias = (torch.device | str | int | dict[str, Any]
                          | Callable[[torch.Tensor, str], torch.Tensor | None] | None)


def is_checkpoint(item: Any) -> bool:
    """Whether a record item is a Lightning checkpoint dict (else a module record)."""
    return isinstance(item, dict) and "state_dict" in item and "pytorch-lightning_version" in item


def encode_checkpoint(checkpoint: dict[str, Any], recorder: Recorder, full: bool = False) -> Any:
    settings = None if full else recorder.settings

    def tensor_dtype(key: str, t: torch.Tensor) -> torch.dtype:
        # Only model weights are stored at the recorder's precision.
        if settings is not None and key.startswith("state_dict.") and t.is_floating_point():
            return storage_dtype(t, settings)
        return t.dtype

    def unstorable(key: str, kind: str) -> None:
        warnings.warn(f"checkpoint key '{key}' holds a {kind}, which can't be stored without pickle; "
                      "it is saved as a marker and reads back as burnlike.record.Unstorable", stacklevel=4)

    return encode_value(checkpoint, tensor_dtype, "", unstorable)


def load_checkpoint(path: str | os.PathLike[str], recorder: Recorder | None = None,
                    map_location: MapLocation = None) -> dict[str, Any]:
    """Read a checkpoint written by `RecorderCheckpointIO` (any recorder's format, found by the registry)."""
    target = Path(path)
    recorder = recorder or registry.sniff(target)
    item = recorder.load(target)
    try:
        value = decode_value(item, target)
    except RecursionError:
        raise RecordError("checkpoint nests too deeply", target) from None
    if not isinstance(value, dict) or "state_dict" not in value:
        raise RecordError("not a training checkpoint (no 'state_dict')", target)
    checkpoint: dict[str, Any] = value if map_location is None else _map_location(value, map_location)
    return checkpoint


def _map_location(value: Any, map_location: MapLocation) -> Any:
    """torch.load's `map_location` for decoded tensors: a device, a str, a {from: to} dict or a
    callable(tensor, location)."""
    def move(t: torch.Tensor) -> torch.Tensor:
        if callable(map_location):
            out = map_location(t, "cpu")
            return out if isinstance(out, torch.Tensor) else t
        if isinstance(map_location, dict):
            dest = map_location.get("cpu", map_location.get(str(t.device)))
            return t.to(dest) if dest is not None else t
        return t.to(torch.device(map_location))  # type: ignore[arg-type]

    def walk(obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return move(obj)
        if isinstance(obj, dict):
            return type(obj)((k, walk(v)) for k, v in obj.items())
        if isinstance(obj, list):
            return [walk(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(walk(v) for v in obj)
        return obj

    return walk(value)
