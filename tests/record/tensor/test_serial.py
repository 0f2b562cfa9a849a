"""`burnlike.record.tensor.serial`: copies and min/max over big tensors kept on the calling thread
(torch's intra-op pool only adds hand-offs to a save or load). Results equal torch's whole-tensor
ops, NaN and int64 extremes included, wherever they lie; inside `alone()` a cast is one torch call
with torch's team set to one on this thread only (restored after, errors included); outside it,
casts go in pieces of about 32K values (whole rows for strided tensors) and min/max by numpy."""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable

import pytest
import torch

from burnlike.record.tensor import serial
from burnlike.record.tensor.precision import HalfPrecisionSettings, storage_dtype
from tests.record.tensor.helpers import OpCounts, count_ops, needs_omp

N = 5 * serial.CHUNK + 7  # six 32K pieces


def _on_a_new_thread(fn: Callable[[], object]) -> OpCounts:
    """`fn` counted on a thread that has never entered `alone()` (its thread-local state unset)."""
    out: list[OpCounts] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(count_ops(fn))
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    if errors:
        raise errors[0]
    return out[0]


# --- results equal torch's ---


def test_serial_ops_equal_torchs_on_big_tensors():
    """Big tensors go piece by piece (no intra-op threads): same results as torch's whole-tensor ops,
    a NaN or an out-of-range value anywhere included."""
    t = torch.randn(N)
    assert [float(v) for v in serial.aminmax(t)] == [float(v) for v in t.aminmax()]
    for where in (0, N // 2, N - 1):  # first, middle and last piece
        wide = t.clone()
        wide[where] = 70000.0
        assert storage_dtype(wide, HalfPrecisionSettings()) == torch.float32
        wide[where] = float("nan")
        assert serial.aminmax(wide)[0].isnan() and serial.aminmax(wide)[1].isnan()
    ints = torch.arange(N, dtype=torch.int64) - 2**40  # beyond what a float64 holds exactly once offset
    ints[-1] = 2**62 + 1
    assert [int(v) for v in serial.aminmax(ints)] == [-(2**40), 2**62 + 1]
    assert storage_dtype(ints, HalfPrecisionSettings()) == torch.int64
    for src_dtype, dst_dtype in [(torch.float32, torch.float16), (torch.float16, torch.float32), (torch.int64, torch.int16)]:
        src = (torch.randn(N) * 1000).to(src_dtype)
        assert torch.equal(serial.copy_(torch.empty(N, dtype=dst_dtype), src), src.to(dst_dtype))


@pytest.mark.parametrize("alone", [False, True])
def test_serial_aminmax_equals_torchs_inside_and_outside_alone(alone):
    """`serial.aminmax` gives torch's whole-tensor result inside `alone()` (one torch pass) and out
    of it (numpy, or pieces), NaN and int64 extremes included."""
    cases = [torch.randn(N), torch.randn(N, dtype=torch.float64), torch.randn(N).half(), torch.randn(N).bfloat16(),
             torch.arange(N, dtype=torch.int64) - 2**40]
    cases[0][N // 3] = float("nan")
    with serial.alone() if alone else contextlib.nullcontext():
        for t in cases:
            lo, hi = serial.aminmax(t)
            want_lo, want_hi = t.aminmax()
            assert torch.equal(lo, want_lo) or lo.isnan() and want_lo.isnan()
            assert torch.equal(hi, want_hi) or hi.isnan() and want_hi.isnan()


@pytest.mark.parametrize("where", [0, 3 * serial.CHUNK + 5])
def test_bf16_min_max_in_pieces_sees_every_element(where):
    t = torch.zeros(4 * serial.CHUNK, dtype=torch.bfloat16)
    t[where] = -8.0
    t[where + 1] = 8.0
    lo, hi = serial.aminmax(t)
    assert (float(lo), float(hi)) == (-8.0, 8.0)


# --- how the work is split ---


def test_a_thread_that_never_went_alone_casts_in_pieces_and_takes_min_max_from_numpy():
    src = torch.randn(N) * 1000
    dst = torch.empty(N, dtype=torch.float16)
    assert _on_a_new_thread(lambda: serial.copy_(dst, src)).copies == 6
    assert torch.equal(dst, src.half())
    got: list[tuple[torch.Tensor, torch.Tensor]] = []
    assert _on_a_new_thread(lambda: got.append(serial.aminmax(src))).aminmax == 0  # numpy's min and max
    assert [float(v) for v in got[0]] == [float(v) for v in src.aminmax()]


@pytest.mark.skipif(serial._OMP_SET is None, reason="torch's OpenMP is not reachable here")
def test_min_max_is_one_torch_pass_alone_numpy_outside_and_pieces_without_numpy():
    t = torch.randn(N)
    with serial.alone():
        assert count_ops(lambda: serial.aminmax(t)).aminmax == 1
    assert count_ops(lambda: serial.aminmax(t)).aminmax == 0
    bf16 = t.bfloat16()  # numpy has no bf16: one torch call per 32K piece
    got: list[tuple[torch.Tensor, torch.Tensor]] = []
    assert count_ops(lambda: got.append(serial.aminmax(bf16))).aminmax == math.ceil(N / serial.CHUNK)
    assert [float(v) for v in got[0]] == [float(v) for v in bf16.aminmax()]


@needs_omp
def test_copy_is_one_call_alone_and_in_pieces_otherwise(monkeypatch):
    """A big cast is one torch call inside `alone()` (one op's set-up instead of one per 32K piece),
    else in pieces; where torch's OpenMP isn't reachable, in pieces even inside `alone()`. The bytes
    are torch's own cast's either way."""
    src = torch.randn(N) * 1000
    dst = torch.empty(N, dtype=torch.float16)

    def cast() -> None:
        serial.copy_(dst, src)

    def cast_alone() -> None:
        with serial.alone():
            serial.copy_(dst, src)

    assert count_ops(cast_alone).copies == 1 and torch.equal(dst, src.half())
    dst.zero_()
    assert count_ops(cast).copies == 6 and torch.equal(dst, src.half())
    monkeypatch.setattr(serial, "_OMP_SET", None)
    dst.zero_()
    assert count_ops(cast_alone).copies == 6 and torch.equal(dst, src.half())


@pytest.mark.parametrize(("shape", "calls"), [
    ((256, 300), 3),  # rows of 300 values: 109 rows (32,700 values) per call
    ((3, 40000), 3),  # a row longer than a piece: one row per call
    ((1, 40000), 1),
])
def test_a_strided_copy_goes_in_blocks_of_whole_rows(shape, calls):
    """Outside `alone()`, a transposed weight (a save's column slice, a load's transposed target) is
    copied in blocks of whole rows of about 32K values, on the calling thread, into a strided
    destination as well as from a strided source."""
    rows, cols = shape
    src = torch.randn(rows, 2 * cols)[:, ::2]  # rows x cols, every other column: not contiguous
    dst = torch.empty(rows, cols, dtype=torch.float16)
    assert count_ops(lambda: serial.copy_(dst, src)).copies == calls
    assert torch.equal(dst, src.half())
    into = torch.empty(rows, 2 * cols, dtype=torch.float16)[:, ::2]  # a strided destination
    plain = torch.randn(rows, cols)
    assert count_ops(lambda: serial.copy_(into, plain)).copies == calls
    assert torch.equal(into, plain.half())


def test_a_strided_column_of_single_values_goes_in_blocks_of_32k_rows():
    src = torch.randn(2 * 40000)[::2].unsqueeze(1)  # 40000 x 1, every other value: strided
    dst = torch.empty(40000, 1)
    assert count_ops(lambda: serial.copy_(dst, src)).copies == 2
    assert torch.equal(dst, src)


# --- alone() ---


@needs_omp
def test_alone_keeps_torch_ops_on_this_thread_and_restores_its_team_after():
    """Inside `alone()` torch sees one thread on this thread only; the team size comes back after,
    also after an error, and other threads never see the change."""
    before = torch.get_num_threads()
    seen: list[int] = []
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait(10)
        seen.append(torch.get_num_threads())
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with serial.alone():
        assert torch.get_num_threads() == 1
        with serial.alone():  # nested: one thread, and the outer one restores
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 1
        inside.set()
        assert done.wait(10)
    thread.join()
    assert seen == [before] and torch.get_num_threads() == before
    with pytest.raises(ValueError), serial.alone():
        raise ValueError
    assert torch.get_num_threads() == before
