"""Burn's tensor layouts: the transpose between PyTorch's `[d_out, d_in]` Linear weights and Burn's
`[d_in, d_out]`, with the dtype cast done where it is cheap; and `TensorBytes`, a tensor's record
bytes produced (cast, transposed) only when a writer asks for them.

Why a module: at 100M parameters this transpose is most of a record's save and load time. A
same-dtype `dst.copy_(src.t())` takes torch's blocked transpose kernel; a transpose that also casts
goes element by element instead, several times slower. So the transpose is always done at the
narrower dtype, and the cast on contiguous memory (less than half the time of numpy tiles; the
figures are in docs/benchmarks.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from burnlike.record.tensor import serial
from burnlike.record.tensor.buffers import Scratch, as_bytes
from burnlike.record.tensor.dtypes import itemsize
from burnlike.record.tensor.precision import f16_peak

# settles a tensor's recorded dtype: `decide(tensor, peak)`, where `peak` is `precision.f16_peak` of
# all of the tensor's bytes already made at f16 (or None), which may spare the decision a pass over it
Decide = Callable[[torch.Tensor, int | None], torch.dtype]

PAIRS_SLOT = 4  # the scratch slot `transpose_pairs` uses (0-1: a save's view, 2-3: a load's read)


def transpose_into(dst: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """`dst.copy_(src.t())` for 2-D tensors of the same dtype (torch's blocked transpose when `dst`
    is contiguous)."""
    return dst.copy_(src.t())


def _pairable(src: torch.Tensor) -> bool:
    """Whether `transpose_pairs` can take `src`: 2-byte elements, 2-D, contiguous, an even row length."""
    return bool(src.dim() == 2 and itemsize(src.dtype) == 2 and src.is_contiguous() and src.shape[1] % 2 == 0
                and src.storage_offset() % 2 == 0)


def transpose_pairs(dst: torch.Tensor, src: torch.Tensor, scratch: Scratch) -> torch.Tensor:
    """`dst.copy_(src.t())` for a 2-byte `src` (see `_pairable`) into a contiguous CPU `dst` of any
    dtype: the blocked transpose moves neighbouring pairs as 4-byte words, `[a, b] -> [b/2, a]`, and
    one more pass splits each pair into its two rows of `dst` (casting on the way when widening).
    Why: torch's transpose of 2-byte elements is the slow part of a record load; in pairs a load's
    transpose-and-widen takes less time. Only for widening: there the split is the cast's pass
    anyway; a save or a same-dtype transpose would gain a pass, and was slower (docs/benchmarks.md)."""
    a, b = src.shape
    words = transpose_into(scratch.get(PAIRS_SLOT, torch.int32, [b // 2, a]), src.view(torch.int32))
    pairs = words.view(src.dtype).view(b // 2, a, 2).permute(0, 2, 1)  # [j, k, i] = src[i, 2j + k]
    return dst.view(b // 2, 2, a).copy_(pairs).view(b, a)  # whole: in 32K pieces it took 1.2x as long


def transposed_cast(dst: torch.Tensor, src: torch.Tensor, scratch: Scratch, slot: int) -> torch.Tensor:
    """`dst.copy_(src.t())` with any dtypes: the transpose at the narrower dtype, the cast on
    contiguous memory (saving f32 as f16: cast, then transpose; loading f16 into f32: transpose,
    then cast; widening 2-byte elements: in pairs). Uses `scratch` slot `slot` for the intermediate."""
    if dst.device.type != "cpu" or not dst.is_contiguous():
        return dst.copy_(src.to(dst.device).t())  # one transfer, transpose on the device
    src = src.detach()
    target = dst.detach()
    if src.dtype == dst.dtype:
        transpose_into(target, src)
    elif itemsize(dst.dtype) < itemsize(src.dtype):
        narrow = serial.copy_(scratch.get(slot, dst.dtype, list(src.shape)), src)
        transpose_into(target, narrow)
    elif _pairable(src):
        transpose_pairs(target, src, scratch)
    else:
        narrow = transpose_into(scratch.get(slot, src.dtype, list(dst.shape)), src)
        serial.copy_(target, narrow)
    return dst


class TensorBytes:
    """A tensor's record bytes, produced only when written (cast and transposed via scratch).

    With `decide`, `dtype` is only the likely one: `decide` settles it when the bytes are first
    produced, which a save does on its worker threads (the f16 range check is a pass over the
    weights; Burn's TensorData writes its bytes before its dtype, so nothing waits for it). Produced
    whole, the bytes are made at the likely dtype first and their `f16_peak` handed to `decide`,
    which can often settle it from that; made again only if it picks another dtype.
    A big tensor's bytes can be produced in parts of rows (`row_parts`, `part`), on two threads at
    once: deciding takes a lock, so it happens once. A writer that can go back in its file asks for
    the parts `tentative`ly: made at the likely f16, each part's peak kept, and decided by `settle()`
    once all are written, instead of by a pass over the whole tensor before the first part."""

    __slots__ = ("tensor", "_dtype", "transpose", "_decide", "_lock", "_peak", "_rows_seen", "_tentative")

    def __init__(self, tensor: torch.Tensor, dtype: torch.dtype, transpose: bool = False,
                 decide: Decide | None = None) -> None:
        self.tensor = tensor.detach()
        self._dtype = dtype
        self.transpose = transpose
        self._decide = decide
        self._lock = threading.Lock() if decide is not None else None
        self._peak = -1  # the largest `f16_peak` of the parts made tentatively (-1: none yet)
        self._rows_seen = 0  # rows made tentatively
        self._tentative: torch.dtype | None = None  # the dtype tentative parts were made at

    @property
    def dtype(self) -> torch.dtype:
        """The recorded dtype (decided now if it wasn't yet)."""
        return self._decided(None)

    def _decided(self, peak: int | None) -> torch.dtype:
        if self._decide is not None and self._lock is not None:
            with self._lock:
                decide = self._decide
                if decide is not None:
                    self._dtype = decide(self.tensor, peak)
                    self._decide = None
        return self._dtype

    def settle(self) -> bool:
        """Decides the dtype if parts were made tentatively (from their peaks when they covered every
        row, else by the exact pass); whether the bytes made so far stand. False: it was decided wider
        than the tentative parts, which must be made again at `dtype`."""
        if self._lock is None:
            return True
        with self._lock:
            made, self._tentative = self._tentative, None
        if made is None:  # no tentative part: every part was made at the decided dtype
            return True
        return self._decided(self._peak if self._rows_seen == self.rows else None) == made

    def _keep(self, rows: tuple[int, int], made: torch.dtype, peak: int | None) -> bool:
        """Whether a tentative part made at `made` stands: its peak recorded for `settle()`, or the
        tensor decided meanwhile at that dtype. False: no peak (decide now), or decided wider."""
        if peak is None or self._lock is None:
            return False
        with self._lock:
            if self._decide is None:
                return self._dtype == made
            self._tentative = made
            self._peak = max(self._peak, peak)
            self._rows_seen += rows[1] - rows[0]
            return True

    @property
    def nbytes(self) -> int:
        return self.tensor.numel() * itemsize(self.dtype)

    @property
    def likely_nbytes(self) -> int:
        """`nbytes` without deciding: at the likely dtype until decided (the dtype tentative parts
        are made at), then at the decided one."""
        return self.tensor.numel() * itemsize(self._dtype)

    @property
    def shape(self) -> list[int]:
        return list(self.tensor.shape[::-1]) if self.transpose else list(self.tensor.shape)

    @property
    def zero_copy(self) -> bool:
        """Whether `view` hands out the tensor's own memory (nothing to decide, cast, transpose or move)."""
        t = self.tensor
        return self._decide is None and not self.transpose and t.device.type == "cpu" and \
            t.dtype == self._dtype and t.is_contiguous()

    @property
    def rows(self) -> int:
        """The recorded tensor's first dimension (1 for a scalar): what `row_parts` divides."""
        shape = self.shape
        return shape[0] if shape else 1

    def view(self, scratch: Scratch) -> memoryview:
        """The bytes, valid until `scratch` is used again (zero-copy when no cast is needed)."""
        return self.part(scratch, (0, self.rows))

    def row_parts(self, part_bytes: int) -> list[tuple[int, int]]:
        """Ranges of the recorded tensor's first dimension, each about `part_bytes` of bytes at the
        likely dtype: one range (the whole tensor) unless it is over two parts' worth and on the CPU.
        Why whole up to two: a tensor made whole settles its own f16 check (`part`) and is cast
        contiguously, and its scratch still stays within two parts. GPT-2's 768x3072 MLP weights
        (4.5 MiB in f16) in two parts each needed a pass over the f32 source and strided casts, and
        a transformer's save took a fifth longer (docs/benchmarks.md)."""
        rows = self.rows
        if self.tensor.device.type != "cpu" or self.likely_nbytes <= 2 * part_bytes or rows < 2:
            return [(0, rows)]
        step = max(1, part_bytes // max(1, self.likely_nbytes // rows))
        return [(r, min(rows, r + step)) for r in range(0, rows, step)]

    def part(self, scratch: Scratch, rows: tuple[int, int], temp: Scratch | None = None,
             tentative: bool = False) -> memoryview:
        """The bytes of recorded rows `rows` (from `row_parts`; `view` is all of them), valid until
        `scratch` is used again: concatenated in order, the parts are `view`'s bytes. `temp` holds
        what is needed only within this call (a cast before its transpose; default: `scratch`).
        `tentative`: a part of an undecided tensor may be made at the likely f16 without deciding;
        the caller then writes `likely_nbytes` and calls `settle()` after the last part."""
        temp = scratch if temp is None else temp
        whole = rows == (0, self.rows)
        if self._decide is not None and (whole or tentative and self._dtype == torch.float16):
            likely = self._dtype
            made = self._at(likely, scratch, rows, temp)
            peak = f16_peak(made)
            if whole and self._decided(peak) == likely or not whole and self._keep(rows, likely, peak):
                return as_bytes(made)
        return as_bytes(self._at(self.dtype, scratch, rows, temp))

    def _at(self, dtype: torch.dtype, scratch: Scratch, rows: tuple[int, int], temp: Scratch) -> torch.Tensor:
        """Recorded rows `rows` at `dtype`: the tensor itself when nothing is to be done, else in `scratch`."""
        start, stop = rows
        t = self.tensor if self.tensor.device.type == "cpu" else self.tensor.cpu()
        whole = (start, stop) == (0, self.rows)
        if not self.transpose:
            src = t if whole else t[start:stop]  # (a scalar has no rows to slice)
            if src.dtype == dtype and src.is_contiguous():
                return src
            return serial.copy_(scratch.get(1, dtype, list(src.shape)), src)
        src = t if whole else t[:, start:stop]
        return transposed_cast(scratch.get(1, dtype, [stop - start, t.shape[0]]), src, temp, 0)

    def __bytes__(self) -> bytes:
        return bytes(self.view(Scratch()))

    def __len__(self) -> int:
        return self.nbytes
