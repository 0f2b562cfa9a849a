"""Burn's tensor layouts: the tiled transpose between PyTorch's `[d_out, d_in]` Linear weights and
Burn's `[d_in, d_out]`, with the dtype cast done where it is cheap; and `TensorBytes`, a tensor's
record bytes produced (cast, transposed) only when a writer asks for them.

Why a module: at 100M parameters this transpose is most of a record's save and load time. One
strided `dst.copy_(src.t())` walks `src` a column at a time and misses the cache on every element;
256×256 tiles stay in L2. numpy moves the tiles (same-size ints, a tight strided loop, GIL released
so several weights go at once); torch does the casts.
"""

from __future__ import annotations

import torch

from burnlike.record.tensor import serial
from burnlike.record.tensor.buffers import Scratch, as_bytes
from burnlike.record.tensor.dtypes import INTS, itemsize

TILE = 256  # measured on a 2-core Xeon: 256 beat 64/128/512 and rectangular tiles
_SMALL = 2 * TILE * TILE  # below this a single copy is as fast as tiles


def transpose_into(dst: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """`dst.copy_(src.t())` for 2-D CPU tensors of the same dtype, `dst` contiguous."""
    rows, cols = dst.shape
    size = itemsize(dst.dtype)
    if rows * cols <= _SMALL or dst.dtype != src.dtype or size not in INTS or not dst.is_contiguous():
        return dst.copy_(src.t())
    d = dst.view(INTS[size]).numpy()
    s = src.view(INTS[size]).numpy()
    for i in range(0, rows, TILE):
        band = d[i:i + TILE]
        for j in range(0, cols, TILE):
            band[:, j:j + TILE] = s[j:j + TILE, i:i + TILE].T
    return dst


def transposed_cast(dst: torch.Tensor, src: torch.Tensor, scratch: Scratch, slot: int) -> torch.Tensor:
    """`dst.copy_(src.t())` with any dtypes. Narrowing (saving f32 as f16): cast contiguously, then
    transpose the narrow copy (a strided f32→f16 cast converts element by element: 2.5× slower).
    Widening (loading f16 into f32): cast and transpose in one pass of small tiles."""
    if dst.device.type != "cpu" or not dst.is_contiguous():
        return dst.copy_(src.to(dst.device).t())  # one transfer, transpose on the device
    src = src.detach()
    target = dst.detach()
    if src.dtype == dst.dtype:
        transpose_into(target, src)
    elif itemsize(dst.dtype) < itemsize(src.dtype):
        narrow = serial.copy_(scratch.get(slot, dst.dtype, list(src.shape)), src)
        transpose_into(target, narrow)
    else:
        _widening_tiles(target, src)
    return dst


def _widening_tiles(dst: torch.Tensor, src: torch.Tensor) -> None:
    """`dst.copy_(src.t())` into a wider dtype in one pass, tile by tile: reads the narrow source
    once, writes each cache line of `dst` once. A tile holds 32768 elements, so torch copies it on
    the calling thread (larger copies fan out to its thread pool, which the loader's own threads
    would oversubscribe)."""
    rows, cols = dst.shape
    for i in range(0, rows, TILE):
        band = dst[i:i + TILE]
        for j in range(0, cols, TILE // 2):
            band[:, j:j + TILE // 2].copy_(src[j:j + TILE // 2, i:i + TILE].t())


class TensorBytes:
    """A tensor's record bytes, produced only when written (cast and transposed via scratch)."""

    __slots__ = ("tensor", "dtype", "transpose", "nbytes")

    def __init__(self, tensor: torch.Tensor, dtype: torch.dtype, transpose: bool = False) -> None:
        self.tensor = tensor.detach()
        self.dtype = dtype
        self.transpose = transpose
        self.nbytes = tensor.numel() * itemsize(dtype)

    @property
    def shape(self) -> list[int]:
        return list(self.tensor.shape[::-1]) if self.transpose else list(self.tensor.shape)

    @property
    def zero_copy(self) -> bool:
        """Whether `view` hands out the tensor's own memory (nothing to cast, transpose or move)."""
        t = self.tensor
        return not self.transpose and t.device.type == "cpu" and t.dtype == self.dtype and t.is_contiguous()

    def view(self, scratch: Scratch) -> memoryview:
        """The bytes, valid until `scratch` is used again (zero-copy when no cast is needed)."""
        if self.zero_copy:
            return as_bytes(self.tensor)
        t = self.tensor
        if t.device.type != "cpu":
            t = t.cpu()
        if not self.transpose:
            if t.dtype == self.dtype and t.is_contiguous():
                return as_bytes(t)
            return as_bytes(serial.copy_(scratch.get(1, self.dtype, self.shape), t))
        return as_bytes(transposed_cast(scratch.get(1, self.dtype, self.shape), t, scratch, 0))

    def __bytes__(self) -> bytes:
        return bytes(self.view(Scratch()))

    def __len__(self) -> int:
        return self.nbytes
