"""Moving a checked record's tensors into a module: all at the end, big ones on a few threads.

Why deferred: the whole record is validated before any parameter changes, so a bad file leaves the
module as it was. Why threads: at 100M parameters a load is file reads plus Burn's transposed
Linear layout; both release the GIL, so two threads load a stack of Linear weights in well under
the time of one (docs/benchmarks.md).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch

from burnlike.record.tensor.buffers import PART_BYTES, Scratch
from burnlike.record.tensor.dtypes import itemsize
from burnlike.record.tensor.file_slice import FileSlice
from burnlike.record.tensor.layout import transposed_cast
from burnlike.record.tensor.tensor_data import RawBytes, bytes_to_tensor

THREADS = max(1, min(4, os.cpu_count() or 1))
_PARALLEL_BYTES = 1 << 20  # smaller tensors aren't worth a thread hand-off


@dataclass
class Copy:
    target: torch.Tensor
    raw: RawBytes  # already checked against dtype × shape
    dtype: torch.dtype
    shape: list[int]  # as recorded (transposed for Burn's Linear weights)
    transpose: bool

    @property
    def nbytes(self) -> int:
        return len(self.raw) if isinstance(self.raw, FileSlice) else memoryview(self.raw).nbytes

    def parts(self) -> list[Copy]:
        """This copy as parts of at most `PART_BYTES` of record bytes, when it is a big untransposed
        one from the file into a contiguous CPU tensor. Why: a big embedding read whole goes through
        a scratch buffer as big (fresh pages, out of cache) on one thread while the other idles,
        several times slower per value than small tensors (docs/benchmarks.md)."""
        raw, target = self.raw, self.target
        if self.transpose or not isinstance(raw, FileSlice) or len(raw) <= PART_BYTES or \
                target.device.type != "cpu" or not target.is_contiguous():
            return [self]
        size = itemsize(self.dtype)
        flat, n, step = target.detach().view(-1), len(raw) // size, PART_BYTES // size
        return [Copy(flat[i:i + step], raw.part(i * size, min(step, n - i) * size), self.dtype, [min(step, n - i)], False)
                for i in range(0, n, step)]

    def run(self, scratch: Scratch) -> None:
        target = self.target.detach()
        if isinstance(self.raw, FileSlice):
            if not self.transpose and _direct(target, self.dtype):
                self.raw.readinto(target)  # file bytes straight into the parameter
                return
            source = self.raw.readinto(scratch.get(2, self.dtype, self.shape))
        else:
            source = bytes_to_tensor(self.raw, self.dtype, self.shape, copy=False)
        with torch.no_grad():
            if self.transpose:
                transposed_cast(target, source, scratch, 3)
            else:
                target.copy_(source)  # whole: torch's pool nearly halves an embedding stack's load


def _direct(target: torch.Tensor, dtype: torch.dtype) -> bool:
    return target.dtype == dtype and target.device.type == "cpu" and target.is_contiguous()


class Transfers:
    """Collects `Copy`s while a record is checked; `run()` does them."""

    def __init__(self) -> None:
        self.copies: dict[int, Copy] = {}  # by id(target)

    def add(self, target: torch.Tensor, raw: RawBytes, dtype: torch.dtype, shape: list[int], transpose: bool) -> None:
        """A tied parameter (one tensor in two places) is written once, from its last record
        entry, as a one-by-one load would leave it; two threads never write the same tensor."""
        self.copies[id(target)] = Copy(target, raw, dtype, shape, transpose)

    def run(self) -> None:
        big: list[Copy] = []
        small: list[Copy] = []
        for c in (part for whole in self.copies.values() for part in whole.parts()):
            parallel = isinstance(c.raw, FileSlice) and c.raw.parallel and c.nbytes >= _PARALLEL_BYTES
            (big if parallel else small).append(c)
        if len(big) < 2 or THREADS == 1:
            _run_all(small + big)
            return
        _run_all(small)
        groups: list[list[Copy]] = [[] for _ in range(THREADS)]
        loads = [0] * THREADS
        for c in sorted(big, key=lambda c: -c.nbytes):  # largest first onto the least-loaded thread
            i = loads.index(min(loads))
            groups[i].append(c)
            loads[i] += c.nbytes
        with ThreadPoolExecutor(THREADS, thread_name_prefix="burnlike-load") as pool:
            for done in [pool.submit(_run_all, g) for g in groups if g]:
                done.result()  # re-raises a RecordError from any thread


def _run_all(copies: list[Copy]) -> None:
    scratch = Scratch()  # one per thread of copies, freed when they are done
    for c in copies:
        c.run(scratch)
