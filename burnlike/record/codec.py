"""Tensors ⇄ Burn's `TensorData{bytes, shape, dtype}`, and Python values ⇄ plain msgpack values.

Nothing here uses pickle: every value is encoded as data, and decoding only builds tensors, numbers,
strings, lists and dicts after checking each field.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from enum import Enum
from pathlib import PurePath
from typing import Any

import numpy as np
import torch

from burnlike.record.error import RecordError
from burnlike.record.precision import PrecisionSettings
from burnlike.record.stream import FileSlice, Scratch, TensorBytes, frombuffer, itemsize

# torch dtype <-> Burn DType name (bincode variant index in Burn 0.19-0.21's enum order).
DTYPES: dict[torch.dtype, str] = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint64: "U64", torch.uint32: "U32", torch.uint16: "U16", torch.uint8: "U8", torch.bool: "Bool",
}
BY_NAME: dict[str, torch.dtype] = {v: k for k, v in DTYPES.items()}
BY_NAME["Flex32"] = torch.float32
BINCODE_INDEX = ["F64", "F32", "Flex32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "Bool"]
NUMPY: dict[torch.dtype, Any] = {
    torch.float64: np.float64, torch.float32: np.float32, torch.float16: np.float16,
    torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16, torch.int8: np.int8,
    torch.uint64: np.uint64, torch.uint32: np.uint32, torch.uint16: np.uint16, torch.uint8: np.uint8,
    torch.bool: np.bool_,
}
F16_MAX = 65504.0
_INT_RANGE = {torch.int16: (-(2**15), 2**15 - 1), torch.int32: (-(2**31), 2**31 - 1)}


F16_TINY = 2.0**-14  # smallest normal f16; below it f16 keeps fewer than 10 significant bits


def storage_dtype(t: torch.Tensor, settings: PrecisionSettings | None) -> torch.dtype:
    """The dtype `t` is recorded at under `settings`.

    Policy (never silently corrupt; cheap: one min/max pass):
    - a float tensor with a finite value beyond ±65504 (would become inf in f16) keeps f32 (f64
      stays f64);
    - a float tensor whose nonzero values are all below f16's normal range (|x| < 2**-14, e.g. a
      tensor of 1e-8 values that would flush to zero or keep only a few bits) keeps f32 as well;
    - otherwise f16 rounding applies element-wise: a tiny value next to large ones rounds to zero
      exactly as f16 rounding of that tensor's scale would (2049→2048, 1e-8→0 beside 1.0);
    - an int tensor outside the target int's range keeps the narrowest wider int that holds it.
    Burn's reader accepts any of these, since each TensorData names its own dtype.
    """
    if settings is None or t.dtype == torch.bool:
        return t.dtype
    if t.is_floating_point():
        target = settings.float_dtype
        if target == torch.float16 and t.dtype != torch.float16 and t.numel():
            wider = torch.float32 if t.dtype != torch.float64 else torch.float64
            lo, hi = t.detach().aminmax()  # one pass, no |t| temporary
            lo_f, hi_f = float(lo), float(hi)
            peak = max(-lo_f, hi_f)
            if not math.isfinite(peak):
                peak = _finite_peak(t)
            if peak > F16_MAX:
                return wider
            if 0.0 < peak < F16_TINY:
                return wider
        return target
    target = settings.int_dtype
    if target in _INT_RANGE and t.numel():
        lo, hi = _INT_RANGE[target]
        t_lo, t_hi = (int(v) for v in t.detach().aminmax())
        if t_lo < lo or t_hi > hi:
            for wider_int in (torch.int32, torch.int64):
                if wider_int not in _INT_RANGE or _INT_RANGE[wider_int][0] <= t_lo and t_hi <= _INT_RANGE[wider_int][1]:
                    return wider_int
    return target


def _finite_peak(t: torch.Tensor) -> float:
    finite = t[torch.isfinite(t)]
    return float(finite.abs().max()) if finite.numel() else 0.0


def dtype_field(dtype: torch.dtype, burn_version: str = "0.21.0") -> Any:
    name = DTYPES.get(dtype)
    if name is None:
        raise RecordError(f"tensors of dtype {dtype} can't be recorded")
    if name == "Bool" and not burn_version.startswith(("0.14", "0.15", "0.16", "0.17", "0.18", "0.19")):
        return {"Bool": "Native"}
    return name


def tensor_to_data(t: torch.Tensor, dtype: torch.dtype | None = None, burn_version: str = "0.21.0",
                   *, transpose: bool = False, lazy: bool = False) -> dict[str, Any]:
    """A TensorData map: raw little-endian bytes, shape, dtype name.

    `lazy` leaves the bytes as a `TensorBytes` the streaming writers produce on the fly (one pass:
    cast, transpose, write); otherwise they are materialised (zero-copy when no cast is needed).
    """
    data = TensorBytes(t, dtype or t.dtype, transpose)
    if data.dtype not in DTYPES:
        raise RecordError(f"tensors of dtype {data.dtype} can't be recorded")
    raw: Any = data if lazy else data.view(Scratch())
    return {"bytes": raw, "shape": data.shape, "dtype": dtype_field(data.dtype, burn_version)}


def is_tensor_data(obj: Any) -> bool:
    return isinstance(obj, dict) and set(obj) == {"bytes", "shape", "dtype"}


def check_data(obj: Any, where: str = "", path: Any = None) -> tuple[Any, torch.dtype, list[int]]:
    """Check a TensorData map (bytes may also be a list of u8, as JSON writes them) without reading
    its bytes: `(raw bytes or FileSlice, dtype, shape)`, byte count checked against shape × itemsize."""
    if not isinstance(obj, dict) or not {"bytes", "shape", "dtype"} <= set(obj):
        raise RecordError("expected TensorData {bytes, shape, dtype}", path, where)
    raw, shape, dtype = obj["bytes"], obj["shape"], obj["dtype"]
    if isinstance(dtype, dict) and list(dtype) == ["Bool"]:
        dtype = "Bool"
    if not isinstance(dtype, str) or dtype not in BY_NAME:
        if isinstance(dtype, dict) and "QFloat" in dtype:
            raise RecordError("quantized (QFloat) tensors are not supported", path, where)
        raise RecordError(f"unknown dtype {dtype!r} (expected one of {sorted(BY_NAME)})", path, where)
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise RecordError(f"shape must be a list of non-negative ints, got {shape!r}", path, where)
    tdtype = BY_NAME[dtype]
    size = itemsize(tdtype)
    count = math.prod(shape)
    if isinstance(raw, list):
        if len(raw) != count * size or not all(isinstance(b, int) and 0 <= b < 256 for b in raw):
            raise RecordError(f"bytes must be a list of {count * size} u8 for shape {shape} of {dtype}", path, where)
        raw = bytes(raw)
    if not isinstance(raw, (bytes, bytearray, memoryview, FileSlice)):
        raise RecordError(f"bytes must be binary, got {type(raw).__name__}", path, where)
    nbytes = raw.nbytes if isinstance(raw, (memoryview, FileSlice)) else len(raw)
    if count * size != nbytes:
        raise RecordError(f"{nbytes} bytes don't hold shape {shape} of {dtype} ({count * size} bytes)", path, where)
    return raw, tdtype, shape


def data_to_tensor(obj: Any, where: str = "", path: Any = None, copy: bool = True) -> torch.Tensor:
    """Check and decode a TensorData map. `copy=False` may return a read-only view of the bytes,
    for callers that copy out of it at once."""
    raw, tdtype, shape = check_data(obj, where, path)
    if isinstance(raw, FileSlice):
        return raw.readinto(torch.empty(shape, dtype=tdtype))
    return bytes_to_tensor(raw, tdtype, shape, copy)


def bytes_to_tensor(raw: Any, tdtype: torch.dtype, shape: list[int], copy: bool = True) -> torch.Tensor:
    """Raw little-endian bytes as a tensor (a read-only view when `copy=False` and `raw` is bytes)."""
    if not math.prod(shape):
        return torch.empty(shape, dtype=tdtype)
    view_dtype = torch.int16 if tdtype == torch.bfloat16 else tdtype
    arr = frombuffer(raw, np.dtype(NUMPY[view_dtype]).newbyteorder("<"), shape)
    if copy and not arr.flags.writeable:
        arr = arr.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # read-only view only when copy=False: the caller copies out
        out = torch.from_numpy(arr)
    return out.view(torch.bfloat16) if tdtype == torch.bfloat16 else out


# --- arbitrary Python values (training checkpoints) -------------------------------------------------
TAG = "__burnlike__"
_PLAIN_KEYS = (str, int)


def encode_value(obj: Any, tensor_dtype: Any, key: str = "", on_unstorable: Any = None) -> Any:
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
        return {TAG: "odict", "items": [[encode_value(k, tensor_dtype, f"{key}.{k}", on_unstorable),
                                         encode_value(v, tensor_dtype, _join(key, k), on_unstorable)]
                                        for k, v in obj.items()]}
    if isinstance(obj, dict):
        if all(isinstance(k, _PLAIN_KEYS) and not isinstance(k, bool) for k in obj) and TAG not in obj:
            return {k: encode_value(v, tensor_dtype, _join(key, k), on_unstorable) for k, v in obj.items()}
        return {TAG: "dict", "items": [[encode_value(k, tensor_dtype, key, on_unstorable),
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


def _join(key: str, k: Any) -> str:
    return f"{key}.{k}" if key else str(k)


class Unstorable:
    """What a value that could not be recorded reads back as."""

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name, self.text = type_name, text

    def __repr__(self) -> str:
        return f"<unstorable {self.type_name}: {self.text}>"


def decode_value(obj: Any, path: Any = None, key: str = "") -> Any:
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
            dtype = getattr(torch, str(obj["name"]), None)
            if not isinstance(dtype, torch.dtype):
                raise RecordError(f"unknown torch dtype {obj['name']!r}", path, key)
            return dtype
        if tag == "device":
            return torch.device(str(obj["name"]))
        if tag == "bigint":
            return int(str(obj["value"]))
        if tag == "unstorable":
            return Unstorable(str(obj.get("type")), str(obj.get("repr")))
    except RecordError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise RecordError(f"malformed '{tag}' value ({e})", path, key) from None
    raise RecordError(f"unknown tagged value {tag!r}", path, key)


def _list(x: Any) -> list[Any]:
    if not isinstance(x, list):
        raise TypeError("expected a list")
    return x


def _pair(x: Any) -> list[Any]:
    if not isinstance(x, list) or len(x) != 2:
        raise TypeError("expected a [key, value] pair")
    return x
