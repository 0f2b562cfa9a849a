"""Python values ⇄ plain MessagePack values, for training checkpoints: what a Lightning checkpoint
dict holds (tuples, OrderedDicts, int and class keys, tensors, dtypes, devices, big ints) as tagged
maps.

Nothing here uses pickle: every value is encoded as data, and decoding only builds tensors, numbers,
strings, lists and dicts after checking each tag.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import PurePath
from typing import Any

import numpy as np
import torch

from burnlike.record.error import RecordError, RecordPath, quote
from burnlike.record.tensor.dtypes import TORCH_BY_NAME
from burnlike.record.tensor.tensor_data import data_to_tensor, tensor_to_data

TAG = "__burnlike__"
_PLAIN_KEYS = (str, int)
TensorDtype = Callable[[str, torch.Tensor], torch.dtype]  # (key path, tensor) -> the dtype to store it at
OnUnstorable = Callable[[str, str], None]  # (key path, type name): told instead of the default warning


def encode_value(obj: Any, tensor_dtype: TensorDtype, key: str = "", on_unstorable: OnUnstorable | None = None
                 ) -> Any:
    """Python value → plain msgpack value. `tensor_dtype(key, tensor)` picks each tensor's dtype.

    Tuples, OrderedDicts, non-str/int keys, tensors, dtypes and devices become tagged maps
    (`{"__burnlike__": kind, ...}`); objects that can't be stored without pickle become an
    `unstorable` marker and a warning naming the key.
    """
    if obj is None or isinstance(obj, (bool, str, bytes)):
        return obj
    if isinstance(obj, int):
        return obj if -(2**63) <= obj < 2**64 else {TAG: "bigint", "value": str(obj)}
    if isinstance(obj, float):
        return obj
    if isinstance(obj, torch.Tensor):
        return {TAG: "tensor", "data": tensor_to_data(obj, tensor_dtype(key, obj), lazy=True)}
    if isinstance(obj, np.ndarray) and obj.dtype != object:
        try:
            return {TAG: "tensor", "data": tensor_to_data(torch.from_numpy(obj.copy()), None)}
        except (TypeError, RecordError):
            pass  # e.g. complex or string arrays: fall through to the unstorable marker
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, OrderedDict):
        return {TAG: "odict", "items": [[_encode_key(k, tensor_dtype, f"{key}.{k}", on_unstorable),
                                         encode_value(v, tensor_dtype, _join(key, k), on_unstorable)]
                                        for k, v in obj.items()]}
    if isinstance(obj, dict):
        if all(isinstance(k, _PLAIN_KEYS) and not isinstance(k, bool) for k in obj) and TAG not in obj:
            return {k: encode_value(v, tensor_dtype, _join(key, k), on_unstorable) for k, v in obj.items()}
        return {TAG: "dict", "items": [[_encode_key(k, tensor_dtype, key, on_unstorable),
                                        encode_value(v, tensor_dtype, _join(key, k), on_unstorable)]
                                       for k, v in obj.items()]}
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return {TAG: "tuple", "items": [encode_value(v, tensor_dtype, f"{key}[{i}]", on_unstorable)
                                        for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [encode_value(v, tensor_dtype, f"{key}[{i}]", on_unstorable) for i, v in enumerate(obj)]
    if isinstance(obj, torch.dtype):
        return {TAG: "dtype", "name": str(obj).removeprefix("torch.")}
    if isinstance(obj, torch.device):
        return {TAG: "device", "name": str(obj)}
    if isinstance(obj, PurePath):
        return str(obj)  # a path is stored as its text
    if isinstance(obj, Enum) and isinstance(obj.value, (str, int, float)):
        return obj.value
    try:  # OmegaConf containers (hparams from Hydra) become plain dicts/lists
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(obj, (DictConfig, ListConfig)):
            return encode_value(OmegaConf.to_container(obj, resolve=True), tensor_dtype, key, on_unstorable)
    except ImportError:  # pragma: no cover
        pass
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}" if not isinstance(obj, type) else f"class {obj.__qualname__}"
    if on_unstorable is not None:
        on_unstorable(key, kind)
    else:
        warnings.warn(f"record: '{key}' holds a {kind}, which can't be stored without pickle; "
                      "it is replaced by a marker", stacklevel=2)
    return {TAG: "unstorable", "type": kind, "repr": repr(obj)[:200]}


def _encode_key(k: Any, tensor_dtype: TensorDtype, key: str, on_unstorable: OnUnstorable | None) -> Any:
    """A dict key: a class is kept as its name (Lightning keys a legacy callback's state by its
    class, `Callback._legacy_state_key`); anything else as a value."""
    if isinstance(k, type):
        return class_name(k)
    return encode_value(k, tensor_dtype, key, on_unstorable)


def class_name(cls: type) -> dict[str, str]:
    """A class as its module and qualified name: reads back as a `ClassName`."""
    return {TAG: "class", "module": cls.__module__, "qualname": cls.__qualname__}


def _join(key: str, k: Any) -> str:
    return f"{key}.{k}" if key else str(k)


class Unstorable:
    """What a value that could not be recorded reads back as.

    Args:
        type_name: The value's type, as it was saved.
        text: Its `repr`, as it was saved.
    """

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name, self.text = type_name, text

    def __repr__(self) -> str:
        return f"<unstorable {self.type_name}: {self.text}>"


@dataclass(frozen=True)
class ClassName:
    """What a class stored by name (a dict key; Lightning's `hparams_type`) reads back as: its
    module and qualified name, never the class itself (reading a checkpoint imports nothing).
    `lightning_dict` gives back the ones Lightning uses (see its `load_checkpoint`)."""

    module: str
    qualname: str

    def __str__(self) -> str:
        return f"{self.module}.{self.qualname}"


def decode_value(obj: Any, path: RecordPath = None, key: str = "") -> Any:
    """Inverse of `encode_value`; raises RecordError on any malformed tag."""
    if isinstance(obj, list):
        return [decode_value(v, path, f"{key}[{i}]") for i, v in enumerate(obj)]
    if not isinstance(obj, dict):
        return obj
    tag = obj.get(TAG)
    if tag is None:
        return {k: decode_value(v, path, _join(key, k)) for k, v in obj.items()}
    try:
        if tag == "tensor":
            return data_to_tensor(obj["data"], key, path)
        if tag == "tuple":
            return tuple(decode_value(v, path, f"{key}[{i}]") for i, v in enumerate(_list(obj["items"])))
        if tag in ("odict", "dict"):
            pairs = [(decode_value(_pair(p)[0], path, key), decode_value(_pair(p)[1], path, key))
                     for p in _list(obj["items"])]
            return OrderedDict(pairs) if tag == "odict" else dict(pairs)
        if tag == "dtype":
            name = obj["name"]
            dtype = TORCH_BY_NAME.get(name) if isinstance(name, str) else None
            if dtype is None:
                raise RecordError(f"unknown torch dtype {quote(name)}", path, key)
            return dtype
        if tag == "device":
            return torch.device(str(obj["name"]))
        if tag == "bigint":
            return int(str(obj["value"]))
        if tag == "class":
            module, qualname = obj["module"], obj["qualname"]
            if not isinstance(module, str) or not isinstance(qualname, str):
                raise TypeError("a class name is two strings")
            return ClassName(module, qualname)
        if tag == "unstorable":
            return Unstorable(str(obj.get("type")), str(obj.get("repr")))
    except RecordError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise RecordError(f"malformed {quote(tag)} value ({quote(str(e))})", path, key) from None
    raise RecordError(f"unknown tagged value {quote(tag)}", path, key)


def _list(x: Any) -> list[Any]:
    if not isinstance(x, list):
        raise TypeError("expected a list")
    return x


def _pair(x: Any) -> list[Any]:
    if not isinstance(x, list) or len(x) != 2:
        raise TypeError("expected a [key, value] pair")
    return x
