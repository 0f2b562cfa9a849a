"""Burn's tensor layouts: the tiled transpose between PyTorch's `[d_out, d_in]` Linear weights and
Burn's `[d_in, d_out]`, with the dtype cast done where it is cheap.

Why a module: at 100M parameters this transpose is most of a record's save and load time. One
strided `dst.copy_(src.t())` walks `src` a column at a time and misses the cache on every element;
256×256 tiles stay in L2. numpy moves the tiles (same-size ints, a tight strided loop, GIL released
so several weights go at once); torch does the casts (vectorised on contiguous memory).
"""

from __future__ import annotations

import functools
import math

import torch

TILE = 256  # measured on a 2-core Xeon: 256 beat 64/128/512 and rectangular tiles
_INTS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_SMALL = 2 * TILE * TILE  # below this a single copy is as fast as tiles


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


def transposed_cast(dst: torch.Tensor, src: torch.Tensor, scratch: Scratch, slot: int) -> torch.Tensor:
    """`dst.copy_(src.t())` with any dtypes: transpose in the narrower dtype (half the bytes to
    move), cast contiguously (a strided f32→f16 cast converts element by element: 2.5× slower)."""
    if dst.device.type != "cpu" or not dst.is_contiguous():
        return dst.copy_(src.to(dst.device).t())  # one transfer, transpose on the device
    src = src.detach()
    target = dst.detach()
    if src.dtype == dst.dtype:
        transpose_into(target, src)
    elif itemsize(dst.dtype) < itemsize(src.dtype):
        narrow = scratch.get(slot, dst.dtype, list(src.shape)).copy_(src)
        transpose_into(target, narrow)
    else:
        transposed = scratch.get(slot, src.dtype, list(dst.shape))
        target.copy_(transpose_into(transposed, src))
    return dst
