"""Burn's tensor layouts: the tiled transpose between PyTorch's `[d_out, d_in]` Linear weights and
Burn's `[d_in, d_out]`, with the dtype cast done where it is cheap.

Why a module: at 100M parameters this transpose is most of a record's save and load time. One
strided `dst.copy_(src.t())` walks `src` a column at a time and misses the cache on every element;
256×256 tiles stay in L2. numpy moves the tiles (same-size ints, a tight strided loop, GIL released
so several weights go at once); torch does the casts (vectorised on contiguous memory).
When the optional C accelerator (`_native.c`) is built, it does the common pairs (same size, f16↔f32)
in one pass instead: 8×8 blocks converted and transposed in AVX registers.
"""

from __future__ import annotations

import functools
import math
import os

import torch

try:
    from burnlike.record import _native
except ImportError:  # no C compiler at install time: the numpy path below, same results
    _native = None

TILE = 256  # measured on a 2-core Xeon: 256 beat 64/128/512 and rectangular tiles
_INTS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_SMALL = 2 * TILE * TILE  # below this a single copy is as fast as tiles
_HALF, _FLOAT = torch.float16, torch.float32


@functools.cache
def native() -> bool:
    """Whether the C kernels run here (BURNLIKE_NATIVE=0 turns them off, to compare or debug)."""
    return _native is not None and os.environ.get("BURNLIKE_NATIVE", "1") != "0" and _native.available()


def _native_kind(dst: torch.Tensor, src: torch.Tensor) -> int | None:
    """The C kernel for this pair (see _native.c), or None."""
    if not (native() and dst.device.type == src.device.type == "cpu" and dst.dim() == src.dim() == 2
            and dst.is_contiguous() and src.is_contiguous() and src.numel() > 0):
        return None
    if dst.dtype == src.dtype:
        return {2: _native.X16, 4: _native.X32}.get(itemsize(dst.dtype))  # a plain move of the elements
    return {(_HALF, _FLOAT): _native.H2F, (_FLOAT, _HALF): _native.F2H}.get((src.dtype, dst.dtype))


@functools.cache
def itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


class Scratch:
    """Reusable buffers: multi-MB fresh allocations page-fault, which dominated save/load time."""

    def __init__(self) -> None:
        self._bufs: dict[int, torch.Tensor] = {}

    def get(self, slot: int, dtype: torch.dtype, shape: list[int] | tuple[int, ...]) -> torch.Tensor:
        n = math.prod(shape) * itemsize(dtype)
        buf = self._bufs.get(slot)
        if buf is None or buf.numel() < n:
            buf = torch.empty(max(n, 1), dtype=torch.uint8)
            self._bufs[slot] = buf
        return buf[:n].view(dtype).view(tuple(shape))


def transpose_into(dst: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """`dst.copy_(src.t())` for 2-D CPU tensors of the same dtype, `dst` contiguous."""
    rows, cols = dst.shape
    size = itemsize(dst.dtype)
    if rows * cols <= _SMALL or dst.dtype != src.dtype or size not in _INTS or not dst.is_contiguous():
        return dst.copy_(src.t())
    d = dst.view(_INTS[size]).numpy()
    s = src.view(_INTS[size]).numpy()
    for i in range(0, rows, TILE):
        band = d[i:i + TILE]
        for j in range(0, cols, TILE):
            band[:, j:j + TILE] = s[j:j + TILE, i:i + TILE].T
    return dst


def transposed_cast(dst: torch.Tensor, src: torch.Tensor, scratch: Scratch, slot: int, stream: bool = False
                    ) -> torch.Tensor:
    """`dst.copy_(src.t())` with any dtypes: transpose in the narrower dtype (half the bytes to
    move), cast contiguously (a strided f32→f16 cast converts element by element: 2.5× slower).
    `stream`: `dst` won't be read soon (a loaded parameter), so the C kernels write around the cache."""
    if dst.device.type != "cpu" or not dst.is_contiguous():
        return dst.copy_(src.to(dst.device).t())  # one transfer, transpose on the device
    src = src.detach()
    target = dst.detach()
    kind = _native_kind(target, src)
    if kind is not None:
        _native.transpose(kind, target.data_ptr(), src.data_ptr(), *src.shape, stream)
        return dst
    if src.dtype == dst.dtype:
        transpose_into(target, src)
    elif itemsize(dst.dtype) < itemsize(src.dtype):
        narrow = scratch.get(slot, dst.dtype, list(src.shape)).copy_(src)
        transpose_into(target, narrow)
    else:
        transposed = scratch.get(slot, src.dtype, list(dst.shape))
        target.copy_(transpose_into(transposed, src))
    return dst
