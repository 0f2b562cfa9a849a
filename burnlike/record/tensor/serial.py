"""Whole-tensor copies and min/max done on the calling thread: inside `alone()` a copy is one torch
call (the thread's OpenMP team set to one); elsewhere in pieces small enough that torch runs each
piece on the calling thread; min/max by numpy.

Why: torch splits an op over more than 32768 elements across its intra-op thread pool. In a record
save or load that only adds hand-offs: the work is memory-bound, loads already run on threads of
their own, and on a busy machine (dataloader workers, other jobs) the pool's threads spin waiting
for cores: on a loaded machine a save with the pool took three times as long (docs/benchmarks.md).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from burnlike.record.tensor import clib
from burnlike.record.tensor.dtypes import NUMPY

CHUNK = 32768  # torch's grain size: an op this small is never split across threads

# torch's OpenMP (None where torch was built without it)
_OMP_SET = clib.function("omp_set_num_threads", ctypes.c_int)
_OMP_GET = clib.function("omp_get_max_threads")
_state = threading.local()


@contextmanager
def alone() -> Iterator[None]:
    """Within: torch ops called on this thread run on it whole, and `copy_` makes one call.

    How: the thread's own OpenMP team size (an OpenMP per-thread setting, which torch reads on each
    op) is 1 inside and restored after; `torch.set_num_threads` would change it for every thread
    started later too. Where torch's OpenMP can't be reached, `copy_` goes piece by piece instead.
    Why: each call per 32K-element piece pays torch's set-up, which adds up over a big save
    (docs/benchmarks.md)."""
    if _OMP_SET is None or _OMP_GET is None or getattr(_state, "alone", False):
        yield
        return
    torch.get_num_threads()  # torch sets a thread's team size on its first op: let that happen first
    before = _OMP_GET()
    _OMP_SET(1)
    # the OpenMP found here may not be torch's own (another library's, loaded first): then in pieces
    _state.alone = torch.get_num_threads() == 1
    try:
        yield
    finally:
        _state.alone = False
        _OMP_SET(before)


def _whole(*tensors: torch.Tensor) -> bool:
    """Whether to leave the op to torch: small, strided, or not on the CPU (a GPU does it in one launch)."""
    return any(t.device.type != "cpu" or not t.is_contiguous() or t.numel() <= CHUNK for t in tensors)


def copy_(dst: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """`dst.copy_(src)` (same shape; casts): one call inside `alone()`; else piece by piece, flat
    pieces when both are contiguous, else blocks of whole rows (a column slice of a weight: a save's
    part of a transposed tensor)."""
    if getattr(_state, "alone", False):
        return dst.copy_(src)
    if _whole(dst, src):
        if dst.dim() >= 2 and dst.device.type == src.device.type == "cpu" and dst.numel() > CHUNK:
            step = max(1, CHUNK // max(1, dst[0].numel()))
            for i in range(0, dst.shape[0], step):
                dst[i:i + step].copy_(src[i:i + step])
            return dst
        return dst.copy_(src)
    for piece, source in zip(torch.split(dst.view(-1), CHUNK), torch.split(src.view(-1), CHUNK)):  # views, one call each
        piece.copy_(source)
    return dst


def aminmax(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`t.aminmax()` (NaN if `t` holds one, as torch's), on the calling thread: torch's own inside
    `alone()` (one pass, faster than two); else numpy's min and max
    where numpy has the dtype (one thread, vectorised: as fast as torch's whole-tensor op; torch
    in pieces costs ~3x in per-call overhead), else piece by piece."""
    if _whole(t) or getattr(_state, "alone", False) and t.dtype != torch.bool:  # alone: one pass, not two
        lo, hi = t.aminmax()
        return lo, hi
    if t.dtype in NUMPY and t.dtype != torch.bool:
        a = t.view(-1).numpy()
        return torch.as_tensor(a.min()), torch.as_tensor(a.max())
    flat = t.view(-1)
    pieces = [flat[i:i + CHUNK].aminmax() for i in range(0, flat.numel(), CHUNK)]
    return torch.stack([p.min for p in pieces]).min(), torch.stack([p.max for p in pieces]).max()
