"""Tensors ⇄ Burn's `TensorData{bytes, shape, dtype}`.

Decoding checks every field (dtype name, shape, byte count) before it builds a tensor, and never
unpickles: the bytes are raw little-endian elements.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch

from burnlike.record.error import RecordError, RecordPath, quote
from burnlike.record.tensor.buffers import Scratch
from burnlike.record.tensor.dtypes import BY_NAME, DTYPES, NUMPY, itemsize
from burnlike.record.tensor.file_slice import FileSlice
from burnlike.record.tensor.layout import Decide, TensorBytes
from burnlike.record.tensor.version import DEFAULT_VERSION, is_0_19

MAX_DIMS = 64  # torch's own limit on a tensor's dimensions
RawBytes = bytes | bytearray | memoryview | FileSlice  # a TensorData's bytes once checked


def dtype_field(dtype: torch.dtype, burn_version: str = DEFAULT_VERSION) -> str | dict[str, str]:
    """The `dtype` value Burn writes for `dtype` (0.20+ writes Bool as `{"Bool": "Native"}`)."""
    name = DTYPES.get(dtype)
    if name is None:
        raise RecordError(f"tensors of dtype {dtype} can't be recorded")
    if name == "Bool" and not is_0_19(burn_version):
        return {"Bool": "Native"}
    return name


def tensor_to_data(t: torch.Tensor, dtype: torch.dtype | None = None, burn_version: str = DEFAULT_VERSION,
                   *, transpose: bool = False, lazy: bool = False,
                   decide: Decide | None = None) -> dict[str, Any]:
    """A TensorData map: raw little-endian bytes, shape, dtype name.

    `lazy` leaves the bytes as a `TensorBytes` the streaming writers produce on the fly (one pass:
    cast, transpose, write); otherwise they are materialised (zero-copy when no cast is needed).
    `decide` picks the dtype (`dtype` is then the likely one); when lazy, only once the bytes
    are produced, and the map's dtype is a `DtypeField` that writers read after the bytes.
    """
    data = TensorBytes(t, dtype or t.dtype, transpose, decide)
    known = t.dtype if lazy and decide is not None else data.dtype  # decide() keeps only recordable dtypes
    if known not in DTYPES:
        raise RecordError(f"tensors of dtype {known} can't be recorded")
    if lazy:
        field: str | dict[str, str] | DtypeField = DtypeField(data, burn_version) if decide else \
            dtype_field(data.dtype, burn_version)
        return {"bytes": data, "shape": data.shape, "dtype": field}
    raw = data.view(Scratch())
    return {"bytes": raw, "shape": data.shape, "dtype": dtype_field(data.dtype, burn_version)}


class DtypeField:
    """A lazy TensorData's `dtype` value when it is decided while its bytes are produced: writers
    write it with `value()` after the bytes, as Burn's field order (bytes, shape, dtype) has it."""

    __slots__ = ("data", "burn_version")

    def __init__(self, data: TensorBytes, burn_version: str) -> None:
        self.data, self.burn_version = data, burn_version

    def value(self) -> str | dict[str, str]:
        return dtype_field(self.data.dtype, self.burn_version)


def is_tensor_data(obj: Any) -> bool:
    return isinstance(obj, dict) and set(obj) == {"bytes", "shape", "dtype"}


def check_data(obj: Any, where: str = "", path: RecordPath = None) -> tuple[RawBytes, torch.dtype, list[int]]:
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
        raise RecordError(f"unknown dtype {quote(dtype)} (expected one of {sorted(BY_NAME)})", path, where)
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or \
            not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**63 for d in shape):
        raise RecordError(f"shape must be a list of at most {MAX_DIMS} non-negative ints, got {quote(shape)}",
                          path, where)
    tdtype = BY_NAME[dtype]
    size = itemsize(tdtype)
    count = math.prod(shape)  # at most 64 factors below 2**63: cheap
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


def data_to_tensor(obj: Any, where: str = "", path: RecordPath = None, copy: bool = True) -> torch.Tensor:
    """Check and decode a TensorData map. `copy=False` may return a read-only view of the bytes,
    for callers that copy out of it at once."""
    raw, tdtype, shape = check_data(obj, where, path)
    if isinstance(raw, FileSlice):
        return raw.readinto(torch.empty(shape, dtype=tdtype))
    return bytes_to_tensor(raw, tdtype, shape, copy)


def bytes_to_tensor(raw: bytes | bytearray | memoryview, tdtype: torch.dtype, shape: list[int],
                    copy: bool = True) -> torch.Tensor:
    """Raw little-endian bytes as a tensor (a read-only view when `copy=False` and `raw` is bytes)."""
    if not math.prod(shape):
        return torch.empty(shape, dtype=tdtype)
    view_dtype = torch.int16 if tdtype == torch.bfloat16 else tdtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # read-only views of bytes: numpy and torch warn; callers copy out
        arr = np.frombuffer(raw, dtype=np.dtype(NUMPY[view_dtype]).newbyteorder("<")).reshape(shape)
        if copy and not arr.flags.writeable:
            arr = arr.copy()
        out = torch.from_numpy(arr)
    return out.view(torch.bfloat16) if tdtype == torch.bfloat16 else out
