"""Lightning checkpoint dicts as Burn record items, without Lightning: encode one for a recorder,
read one back (`load_checkpoint`, with torch.load's `map_location`).

Model weights (`state_dict` floats) take the recorder's precision; optimizer state, counters, int
tensors, scalars, and the ddp_spawn weight transport (`.temp.ckpt`) keep their own dtype. The classes
Lightning puts in a checkpoint are stored by name: a callback state's class key reads back as the
class when its module is already loaded, an OmegaConf `hparams_type` as OmegaConf's class, any other
as its name; reading never imports what a checkpoint names.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any, TypeAlias

import torch

from burnlike.record.checkpoint.value import TAG, ClassName, class_name, decode_value, encode_value
from burnlike.record.error import RecordError
from burnlike.record.format import registry
from burnlike.record.format.location import AnyPath, RemotePath, as_path
from burnlike.record.format.recorder import Recorder
from burnlike.record.tensor.precision import storage_dtype

SPAWN_TRANSPORT = ".temp.ckpt"
# Lightning's key of the class of a module's (a datamodule's) hparams, set when they are an OmegaConf
# container, and the key of those hparams
HPARAMS_TYPE = {"hparams_type": "hyper_parameters", "datamodule_hparams_type": "datamodule_hyper_parameters"}
_OMEGACONF = {("omegaconf.dictconfig", "DictConfig"), ("omegaconf.listconfig", "ListConfig")}
# torch.load's map_location: a device, a {from: to} map, or a callable(tensor, location)
MapLocation: TypeAlias = (torch.device | str | int | dict[str, Any]
                          | Callable[[torch.Tensor, str], torch.Tensor | None] | None)


def is_checkpoint(item: Any) -> bool:
    """Whether a record item is a Lightning checkpoint dict (else a module record)."""
    return isinstance(item, dict) and "state_dict" in item and "pytorch-lightning_version" in item


def _dtype_rule(recorder: Recorder, full: bool) -> Callable[[str, torch.Tensor], torch.dtype]:
    """Each tensor's dtype on disk: only model weights (`state_dict.*` floats) take the recorder's
    precision."""
    settings = None if full else recorder.settings

    def tensor_dtype(key: str, t: torch.Tensor) -> torch.dtype:
        if settings is not None and key.startswith("state_dict.") and t.is_floating_point():
            return storage_dtype(t, settings)
        return t.dtype

    return tensor_dtype


def encode_checkpoint(checkpoint: dict[str, Any], recorder: Recorder, full: bool = False) -> Any:
    def unstorable(key: str, kind: str) -> None:
        warnings.warn(f"checkpoint key '{key}' holds a {kind}, which can't be stored without pickle; "
                      "it is saved as a marker and reads back as burnlike.record.Unstorable", stacklevel=4)

    types = {k: v for k, v in checkpoint.items() if k in HPARAMS_TYPE and isinstance(v, type)}
    encoded = encode_value({k: v for k, v in checkpoint.items() if k not in types}, _dtype_rule(recorder, full), "",
                           unstorable)
    if isinstance(encoded, dict) and TAG not in encoded:  # a checkpoint's keys are strings: a plain map
        encoded.update({k: class_name(v) for k, v in types.items()})
    return encoded


def map_tensors(obj: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`obj` (dicts, lists, tuples of values) with every tensor replaced by `fn(tensor)`. A named
    tuple is kept as it is: decoded checkpoints never hold one, and rebuilding it needs its class."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return type(obj)((k, map_tensors(v, fn)) for k, v in obj.items())
    if isinstance(obj, list):
        return [map_tensors(v, fn) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(map_tensors(v, fn) for v in obj)
    return obj


def snapshot_checkpoint(checkpoint: dict[str, Any], buffers: list[torch.Tensor] | None = None
                        ) -> tuple[dict[str, Any], list[torch.Tensor]]:
    """A copy of `checkpoint` whose tensors no longer share memory with the live model: what an
    async save writes, so a checkpoint never mixes two steps (Lightning issue #20953). One memcpy
    per tensor at its own dtype (the precision policy's checks and casts run later, on the writer
    thread), into `buffers` (a finished save's copies, in order) where shapes match: reused pages
    cost no page faults, which otherwise dominate the copy. Returns the copy and its buffers."""
    pool = iter(buffers or [])
    used: list[torch.Tensor] = []

    def copy(t: torch.Tensor) -> torch.Tensor:
        src = t.detach()
        buf = next(pool, None)
        if buf is None or buf.shape != src.shape or buf.dtype != src.dtype:
            buf = torch.empty(src.shape, dtype=src.dtype, device="cpu")
        buf.copy_(src)
        used.append(buf)
        return buf

    snapshot: dict[str, Any] = map_tensors(checkpoint, copy)
    return snapshot, used


def load_checkpoint(path: str | os.PathLike[str] | RemotePath, recorder: Recorder | None = None,
                    map_location: MapLocation = None) -> dict[str, Any]:
    """Read a checkpoint written by `RecorderCheckpointIO` (any recorder's format, found by the
    registry), or one `torch.save` wrote (read with torch's `weights_only` loader only).

    Args:
        path: The checkpoint file (a local path or an fsspec URL).
        recorder: Its format (None: told from the file).
        map_location: Where tensors go; CPU when None.

    Returns:
        Lightning's checkpoint dict.

    Raises:
        RecordError: The file is not a checkpoint, or is damaged.
    """
    target = as_path(path)
    if registry.torch_format(target) is not None:
        return load_torch_checkpoint(target, recorder, map_location)
    recorder = recorder or registry.sniff(target)
    item = recorder.load(target)
    try:
        value = decode_value(item, str(target))
    except RecursionError:
        raise RecordError("checkpoint nests too deeply", str(target)) from None
    spawn_weights = target.name.endswith(SPAWN_TRANSPORT) and isinstance(value, dict) and all(
        isinstance(v, torch.Tensor) for v in value.values())  # ddp_spawn hands back a flat state_dict
    if not isinstance(value, dict) or ("state_dict" not in value and not spawn_weights):
        raise RecordError("not a training checkpoint (no 'state_dict')", str(target))
    checkpoint: dict[str, Any] = value if map_location is None else _map_location(value, map_location)
    for type_key, params_key in HPARAMS_TYPE.items():
        if isinstance(checkpoint.get(type_key), ClassName):
            checkpoint[type_key] = _hparams_type(checkpoint, type_key, params_key)
    if isinstance(checkpoint.get("callbacks"), dict):
        checkpoint["callbacks"] = {_loaded_class(k) if isinstance(k, ClassName) else k: v
                                   for k, v in checkpoint["callbacks"].items()}
    return checkpoint


def _hparams_type(checkpoint: dict[str, Any], type_key: str, params_key: str) -> type | str:
    """Lightning calls `checkpoint[type_key](hparams)` when it builds the module. An OmegaConf
    container's class is given back, its hparams made that container again (they are stored as plain
    maps); any other class only as its name, which Lightning reads as an AttributeDict (as in its
    older checkpoints). No class a checkpoint names is ever called."""
    name: ClassName = checkpoint[type_key]
    params = checkpoint.get(params_key)
    if (name.module, name.qualname) in _OMEGACONF and isinstance(params, (dict, list)):
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        try:
            container = OmegaConf.create(params)
        except OmegaConfBaseException:  # e.g. an Unstorable marker inside: the plain maps stay
            return str(name)
        if type(container).__name__ == name.qualname:
            checkpoint[params_key] = container
            return type(container)
    return str(name)


def _loaded_class(name: ClassName) -> type | ClassName:
    """The class a callback state is keyed by (Lightning matches a legacy state by
    `type(callback)`), when its module is already imported; nothing is imported and no attribute
    hook runs (only modules' and classes' `__dict__` lookups). Otherwise the name stays, and
    matches no callback."""
    obj: Any = sys.modules.get(name.module)
    for part in name.qualname.split("."):
        obj = vars(obj).get(part) if isinstance(obj, (types.ModuleType, type)) else None
    if isinstance(obj, type) and obj.__module__ == name.module and obj.__qualname__ == name.qualname:
        return obj
    return name


def load_torch_checkpoint(target: AnyPath, recorder: Recorder | None = None,
                          map_location: MapLocation = None) -> dict[str, Any]:
    """A `torch.save` checkpoint through `torch.load(weights_only=True)`: tensors and plain
    containers only, never arbitrary unpickling. What the allowlist refuses is a RecordError."""
    data = target.read_bytes()
    name = recorder.extension if recorder is not None else "mpk"
    try:
        value = torch.load(io.BytesIO(data), map_location=map_location or "cpu", weights_only=True)  # type: ignore[arg-type]
    except (pickle.UnpicklingError, RuntimeError, EOFError, AttributeError, ValueError, TypeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RecordError(f"a torch.save/pickle file that torch's weights_only loader refuses ({first}); it is "
                          "never unpickled here. If you trust it, keep only its tensors and convert them once: "
                          f"burnlike convert {target} model.{name} --model pkg.module:Net", str(target)) from None
    if not isinstance(value, dict) or "state_dict" not in value:
        raise RecordError("a torch.save file that is not a training checkpoint (no 'state_dict')", str(target))
    warnings.warn(f"{target}: a torch.save checkpoint, read with torch.load(weights_only=True); the next save "
                  "uses the recorder's format", stacklevel=3)
    return value


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

    return map_tensors(value, move)
