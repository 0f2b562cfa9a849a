"""Tensor memory as bytes: zero-copy views, and reusable scratch buffers."""

from __future__ import annotations

import math

import torch

from burnlike.record.tensor.dtypes import itemsize

# A big tensor moves between file and parameters in parts of about this many bytes: a load's read
# (`transfer.Copy.parts`) and a save's produced bytes (`TensorBytes.row_parts`). Why: whole-tensor
# scratch buffers are freshly mapped on each save (a 32000x768 embedding: ~12,000 page faults), and
# parts spread one big tensor over both threads.
PART_BYTES = 4 << 20


def as_bytes(t: torch.Tensor) -> memoryview:
    """A contiguous CPU tensor's raw little-endian bytes, without a copy."""
    if t.numel() == 0:
        return memoryview(b"")
    return t.reshape(-1).view(torch.uint8).numpy().data


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
