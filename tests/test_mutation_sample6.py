"""Record behaviours a mutation draw over the save path's newest code (2026-11-26) found untested:
how `serial.copy_` and `serial.aminmax` split their work outside `alone()` (on a thread that never
entered it too), and `storage_dtype` at its exact boundaries."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import pytest
import torch

from burnlike.record.tensor import serial
from burnlike.record.tensor.precision import (
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    storage_dtype,
)


class _Ops(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the aten copies and min/max ops made on this thread (dispatch modes are per thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.copies = 0
        self.aminmax = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func is torch.ops.aten.copy_.default:
            self.copies += 1
        elif func is torch.ops.aten.aminmax.default:
            self.aminmax += 1
        return func(*args, **(kwargs or {}))


def _count(fn: Callable[[], object]) -> _Ops:
    with _Ops() as ops:
        fn()
    return ops


def _on_a_new_thread(fn: Callable[[], object]) -> _Ops:
    """`fn` counted on a thread that has never entered `alone()` (its thread-local state unset)."""
    out: list[_Ops] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(_count(fn))
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    if errors:
        raise errors[0]
    return out[0]


N = 5 * serial.CHUNK + 7  # six 32K pieces


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
        assert _count(lambda: serial.aminmax(t)).aminmax == 1
    assert _count(lambda: serial.aminmax(t)).aminmax == 0
    bf16 = t.bfloat16()  # numpy has no bf16: one torch call per 32K piece
    got: list[tuple[torch.Tensor, torch.Tensor]] = []
    assert _count(lambda: got.append(serial.aminmax(bf16))).aminmax == math.ceil(N / serial.CHUNK)
    assert [float(v) for v in got[0]] == [float(v) for v in bf16.aminmax()]


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
    assert _count(lambda: serial.copy_(dst, src)).copies == calls
    assert torch.equal(dst, src.half())
    into = torch.empty(rows, 2 * cols, dtype=torch.float16)[:, ::2]  # a strided destination
    plain = torch.randn(rows, cols)
    assert _count(lambda: serial.copy_(into, plain)).copies == calls
    assert torch.equal(into, plain.half())


def test_a_strided_column_of_single_values_goes_in_blocks_of_32k_rows():
    src = torch.randn(2 * 40000)[::2].unsqueeze(1)  # 40000 x 1, every other value: strided
    dst = torch.empty(40000, 1)
    assert _count(lambda: serial.copy_(dst, src)).copies == 2
    assert torch.equal(dst, src)


def test_storage_dtype_at_its_exact_boundaries():
    half, full = HalfPrecisionSettings(), FullPrecisionSettings()
    # f16's smallest normal value is still f16 (its cast can't settle it: the exact pass does)
    assert storage_dtype(torch.tensor([2.0**-14, -(2.0**-14)]), half) == torch.float16
    assert storage_dtype(torch.tensor([2.0**-14 * 0.75]), half) == torch.float32
    # empty tensors need no pass, at any precision
    assert storage_dtype(torch.empty(0), half) == torch.float16
    assert storage_dtype(torch.empty(0, dtype=torch.int64), half) == torch.int16
    # the f16 range check is for f16 only: f64 recorded at full precision is f32 whatever its values
    assert storage_dtype(torch.tensor([1e5, 3e-20], dtype=torch.float64), full) == torch.float32
    # ints: widened to the narrowest int that holds them, i32's own extremes included
    assert storage_dtype(torch.tensor([-(2**31), 2**31 - 1]), half) == torch.int32
    assert storage_dtype(torch.tensor([-(2**31) - 1, 5]), half) == torch.int64
    assert storage_dtype(torch.tensor([5, 2**31]), half) == torch.int64
    # a wider int target than the tensor's: no range to check
    assert storage_dtype(torch.tensor([1, 2], dtype=torch.int32), DoublePrecisionSettings()) == torch.int64


def test_the_exit_handler_ends_a_group_without_a_barrier_and_does_nothing_without_one(one_rank_group, monkeypatch):
    """At exit other ranks may be gone: the group ends without waiting at a barrier. With no group
    up (the app's job ended it already, or none was started) it does nothing."""
    from burnlike.train.process_group import end_process_group

    dist = one_rank_group
    barriers: list[int] = []
    original = dist.barrier
    monkeypatch.setattr(dist, "barrier", lambda *a, **k: barriers.append(1) or original(*a, **k))
    end_process_group()  # as atexit calls it
    assert not dist.is_initialized() and barriers == []
    end_process_group()  # nothing up: no error
    end_process_group(barrier=True)
    assert barriers == []
