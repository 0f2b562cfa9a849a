"""The element types a record can hold: torch dtype ⇄ Burn's `DType` name, bincode's variant
index, the numpy view of each, and byte sizes."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

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
# Every torch dtype a checkpoint may name (`torch.float32` → "float32"), spelled out: names read
# from a file are looked up here, never with `getattr(torch, name)` (which can import submodules
# such as torch._inductor, or return any attribute of torch).
TORCH_BY_NAME: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d for d in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16,
        torch.complex128, torch.complex64, torch.complex32,
        torch.int64, torch.int32, torch.int16, torch.int8,
        torch.uint64, torch.uint32, torch.uint16, torch.uint8, torch.bool,
        torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz,
        torch.qint8, torch.quint8, torch.qint32, torch.quint4x2,
    )
}
INTS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}  # same-size ints, to move raw elements


@functools.cache
def itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()
