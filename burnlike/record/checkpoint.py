"""Training checkpoints as Burn records, without Lightning: encode a Lightning checkpoint dict,
read one back (`load_checkpoint`), take a model's weights out of one. `checkpoint_io` wraps these
in Lightning's CheckpointIO plugin; keeping them apart lets `burnlike inspect`, `Module.load_file`
and the records code read checkpoints without importing Lightning (6 s here).

Model weights (`state_dict` floats) take the recorder's precision; optimizer state, counters, int
tensors, scalars, and the ddp_spawn weight transport (`.temp.ckpt`) keep their own dtype.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from burnlike.record.codec import decode_value, encode_value, storage_dtype
from burnlike.record.error import RecordError
from burnlike.record.recorder import Recorder

SPAWN_TRANSPORT = ".temp.ckpt"


def encode_checkpoint(checkpoint: dict[str, Any], recorder: Recorder, full: bool = False) -> Any:
    settings = None if full else recorder.settings

    def tensor_dtype(key: str, t: torch.Tensor) -> torch.dtype:
        # Only model weights are stored at the recorder's precision.
        if settings is not None and key.startswith("state_dict.") and t.is_floating_point():
            return storage_dtype(t, settings)
        return t.dtype

    def unstorable(key: str, kind: str) -> None:
        warnings.warn(f"checkpoint key '{key}' holds a {kind}, which can't be stored without pickle; "
                      "it is saved as a marker and reads back as burnlike.record.codec.Unstorable", stacklevel=4)

    return encode_value(checkpoint, tensor_dtype, "", unstorable)


def load_checkpoint(path: str | os.PathLike[str], recorder: Recorder | None = None,
                    map_location: Any | None = None) -> dict[str, Any]:
    """Read a checkpoint written by `RecorderCheckpointIO` (any recorder format, found by extension)."""
    target = Path(path)
    recorder = recorder or recorder_for(target)
    item = recorder.load(target)
    try:
        value = decode_value(item, target)
    except RecursionError:
        raise RecordError("checkpoint nests too deeply", target) from None
    if not isinstance(value, dict) or "state_dict" not in value:
        raise RecordError("not a training checkpoint (no 'state_dict')", target)
    if map_location is not None:
        value = _map_location(value, map_location)
    return value


def _map_location(value: Any, map_location: Any) -> Any:
    """torch.load's `map_location` for decoded tensors: a device, a str, a {from: to} dict or a
    callable(tensor, location)."""
    def move(t: torch.Tensor) -> torch.Tensor:
        if callable(map_location):
            out = map_location(t, "cpu")
            return out if isinstance(out, torch.Tensor) else t
        if isinstance(map_location, dict):
            dest = map_location.get("cpu", map_location.get(str(t.device)))
            return t.to(dest) if dest is not None else t
        return t.to(torch.device(map_location))

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


def recorder_for(path: Path) -> Recorder:
    """The recorder that reads `path`: by extension, else by sniffing the first bytes (Lightning
    names every checkpoint `.ckpt`, whatever recorder wrote it)."""
    from burnlike.record import recorder as rec
    from burnlike.record.bincode import BinFileRecorder, BinGzFileRecorder

    table: list[tuple[str, type[Recorder]]] = [
        ("mpk.gz", rec.NamedMpkGzFileRecorder), ("json.gz", rec.JsonGzFileRecorder), ("bin.gz", BinGzFileRecorder),
        ("json", rec.PrettyJsonFileRecorder), ("mpk", rec.NamedMpkFileRecorder), ("bin", BinFileRecorder),
    ]
    for ext, cls in table:
        if path.name.endswith("." + ext):
            return cls()
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return rec.NamedMpkFileRecorder()
    gz = head[:2] == b"\x1f\x8b"
    if gz:
        import zlib

        try:
            head = zlib.decompressobj(wbits=31).decompress(head, 64)
        except zlib.error:
            return rec.NamedMpkGzFileRecorder()
    kind = "json" if head.lstrip()[:1] == b"{" else "mpk" if head[:1] == b"\x83" else "bin"
    return dict(table)[f"{kind}.gz" if gz else kind]()


def weights_from_checkpoint(module: nn.Module, checkpoint: Any, path: Any = None) -> None:
    """Load a model's weights out of a raw checkpoint record item (StepModule keys are `model.*`)."""
    state = decode_value(checkpoint.get("state_dict"), path, "state_dict")
    if not isinstance(state, dict):
        raise RecordError("checkpoint 'state_dict' is not a map", path, "state_dict")
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise RecordError(f"expected a tensor, got {type(value).__name__}", path, f"state_dict.{key}")
    own = module.state_dict()
    prefixed = {k[len("model."):]: v for k, v in state.items() if isinstance(k, str) and k.startswith("model.")}
    weights = prefixed if prefixed and not any(k in own for k in state) else dict(state)
    missing = [k for k in own if k not in weights]
    if missing:
        raise RecordError(f"checkpoint lacks {len(missing)} model entries, e.g. '{missing[0]}'", path, "state_dict")
    for key, tensor in weights.items():
        if key in own and tuple(tensor.shape) != tuple(own[key].shape):
            raise RecordError(f"shape {list(tensor.shape)} in the checkpoint, model has {list(own[key].shape)}",
                              path, f"state_dict.{key}")
    try:
        module.load_state_dict({k: v for k, v in weights.items() if k in own}, strict=True)
    except RuntimeError as e:  # e.g. a dtype that can't be cast
        raise RecordError(f"can't load the checkpoint's weights ({e})", path, "state_dict") from None
