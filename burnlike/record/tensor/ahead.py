"""`ViewsAhead`: the record bytes of a save's big tensors, decided (f16 or wider), cast and
transposed on a worker thread while the writer is still writing earlier ones; the writer produces
queued ones itself whenever the part it needs is still being made.

Why: at 100M parameters in Burn's Linear layout a save is mostly casts, transposes, range checks
(memory-bound, GIL released) and file writes. The work is memory-bound, so busy threads beyond the
cores slow each other down: two workers beside the writer gained little on two cores, while one
worker, and a writer that makes a later queued part itself instead of waiting for one still being
made, took a fifth off the save (docs/benchmarks.md). A queued job no worker has started when the
writer reaches it is likewise made by the writer.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import IO, Any

from burnlike.record.tensor import serial
from burnlike.record.tensor.buffers import PART_BYTES, Scratch
from burnlike.record.tensor.layout import TensorBytes

# worker threads beside the writer, which makes parts too: one per other core, at most two (none on one core)
WORKERS = max(0, min(2, (os.cpu_count() or 1) - 1))
_AHEAD_BYTES = 1 << 20  # smaller tensors are prepared inline: not worth a thread hand-off


def tensor_bytes_in(obj: Any) -> Iterator[TensorBytes]:
    """The `TensorBytes` in a record, in the order a writer walking it meets them (maps in insertion
    order, lists in order)."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, TensorBytes):
            yield o
        elif isinstance(o, dict):
            stack.extend(reversed(list(o.values())))
        elif isinstance(o, (list, tuple)):
            stack.extend(reversed(o))


def _worth_ahead(tb: TensorBytes) -> bool:
    return tb.likely_nbytes >= _AHEAD_BYTES and not tb.zero_copy


Job = tuple[TensorBytes, tuple[int, int]]  # a tensor and the rows of it to produce


def _jobs(tb: TensorBytes) -> list[Job]:
    """A big tensor's jobs: its parts of about `PART_BYTES` (one job for a tensor up to that size)."""
    return [(tb, rows) for rows in tb.row_parts(PART_BYTES)]


class Temps:
    """Each thread's own scratch for what lives only within one part (a cast before its transpose).
    Why not one per ring slot: the work is memory-bound, and with one per thread a save's buffers
    stay small enough to stay in cache, which makes the save faster (docs/benchmarks.md)."""

    def __init__(self) -> None:
        self._by_thread: dict[int, Scratch] = {}

    def mine(self) -> Scratch:
        return self._by_thread.setdefault(threading.get_ident(), Scratch())


def _produce(job: Job, scratch: Scratch, temps: Temps, tentative: bool = False) -> memoryview:
    with serial.alone():
        return job[0].part(scratch, job[1], temps.mine(), tentative)


class ViewsAhead:
    """`parts(tb)` are `tb`'s record bytes (`tb.view(scratch)` in parts of about `PART_BYTES`),
    computed ahead for the big tensors of `order`.

    The writer must ask for the big ones in `order` (it may ask for others in between); a part
    stays valid until the next part is asked for, as with one `Scratch`. Asked out of order, it falls
    back to preparing inline. Use as a context manager: the workers stop on exit, even on an error.

    `rewind`: the writer can go back in its file, so parts are made `tentative`ly (`TensorBytes.part`):
    after a tensor's last part it calls `tb.settle()`, and when that is False goes back to where the
    tensor started and writes `again(tb)`. Why: a big tensor in parts was decided by a pass over all
    of its f32 values before its first part (the bin's length depends on the dtype), on the writer's
    critical path; the parts' own casts settle it instead (docs/benchmarks.md).
    """

    def __init__(self, order: Iterable[TensorBytes], workers: int | None = None, rewind: bool = False) -> None:
        workers = WORKERS if workers is None else workers
        self.rewind = rewind
        # planned once: a tensor's dtype may be decided (wider) while the save runs, which would
        # change its size and whether it is worth a worker, but not the plan
        self.planned = {id(tb): _jobs(tb) for tb in order if _worth_ahead(tb)}
        self.queue = [job for jobs in self.planned.values() for job in jobs]
        self.inline = Scratch()
        self.temps = Temps()
        self.prepared = 0  # parts handed out that were made ahead (by a worker, or by the writer: `helped`)
        self.helped = 0  # queued jobs the writer made ahead while the part it needed was being made
        self.stolen = 0  # queued jobs no worker had started when the writer reached them: done inline
        self.pool: ThreadPoolExecutor | None = None
        if workers >= 1 and len(self.queue) > 1:
            self.pool = ThreadPoolExecutor(workers, thread_name_prefix="burnlike-save")
            depth = workers + 2  # jobs in flight: two queued beyond the running ones, for the writer to help with
            self.ring = [Scratch() for _ in range(depth + 1)]  # one per job in flight + the one being written
            self.futures: deque[Future[memoryview]] = deque()
            self.submitted = 0
            for _ in range(depth):
                self._submit()

    def _submit(self) -> None:
        assert self.pool is not None
        i = self.submitted
        if i < len(self.queue):
            # job i - len(ring) used this slot and has been written: the writer has asked for a later one
            self.futures.append(self.pool.submit(_produce, self.queue[i], self.ring[i % len(self.ring)], self.temps,
                                                 self.rewind))
            self.submitted += 1

    def parts(self, tb: TensorBytes) -> Iterator[memoryview]:
        """`tb`'s bytes, part by part (one part for a small tensor); `tb.nbytes` is known once the
        first part is out."""
        for job in self._jobs_of(tb):
            yield self._part(job)

    def write(self, tb: TensorBytes, f: IO[bytes], header: Callable[[int], object]) -> None:
        """`header(n)` (writes the length `n` to `f`), then `tb`'s bytes to `f`. With `rewind`: once
        they are all out, if `tb.settle()` decided a wider dtype than the tentative parts, goes back
        to where the header started and writes both again."""
        start = f.tell() if self.rewind else 0
        for i, part in enumerate(self.parts(tb)):
            if i == 0:  # the length is known: decided, or the likely one while the parts are tentative
                header(tb.likely_nbytes)
            f.write(part)
        if not tb.settle():
            f.seek(start)
            f.truncate()
            header(tb.nbytes)
            for part in self.again(tb):
                f.write(part)

    def again(self, tb: TensorBytes) -> Iterator[memoryview]:
        """`tb`'s bytes at its decided dtype, part by part, made here (after `settle()` said False)."""
        for job in _jobs(tb):
            yield _produce(job, self.inline, self.temps)

    def view(self, tb: TensorBytes) -> memoryview:
        """All of `tb`'s bytes at once (copied together when they came in parts)."""
        jobs = self._jobs_of(tb)
        if len(jobs) == 1:
            return self._part(jobs[0])
        out = b"".join(bytes(self._part(job)) for job in jobs)
        return memoryview(out if tb.settle() else b"".join(bytes(part) for part in self.again(tb)))

    def _jobs_of(self, tb: TensorBytes) -> list[Job]:
        return self.planned.get(id(tb)) or [(tb, (0, tb.rows))]

    def _part(self, job: Job) -> memoryview:
        if self.pool is None or not self.futures:
            return _produce(job, self.inline, self.temps, self.rewind)
        taken = self.submitted - len(self.futures)
        queued = self.queue[taken]
        if queued[0] is not job[0] or queued[1] != job[1]:
            if id(job[0]) in self.planned:
                self.close()  # out of order: the ring's slots can't be trusted any more
            return _produce(job, self.inline, self.temps, self.rewind)
        self._help(taken)
        future = self.futures.popleft()
        if future.cancel():  # no worker has started it: the writer prepares it rather than wait
            out = _produce(job, self.inline, self.temps, self.rewind)
            self.stolen += 1
        else:
            out = future.result()
            self.prepared += 1
        self._submit()
        return out

    def _help(self, taken: int) -> None:
        """While a worker is still making job `taken`, the writer makes queued later jobs no worker
        has started (each into its own ring slot), rather than wait."""
        first = self.futures[0]
        for i in range(1, len(self.futures)):
            if first.done() or not first.running():
                return
            if self.futures[i].cancel():
                job = taken + i
                made: Future[memoryview] = Future()
                made.set_result(_produce(self.queue[job], self.ring[job % len(self.ring)], self.temps, self.rewind))
                self.futures[i] = made
                self.helped += 1

    def close(self) -> None:
        if self.pool is not None:
            for f in self.futures:
                f.cancel()
            self.pool.shutdown(wait=True)
            self.pool = None
            self.futures.clear()

    def __enter__(self) -> ViewsAhead:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
