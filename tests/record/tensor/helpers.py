"""Counters of the torch work a tensor operation does (aten copies, min/max passes), for the tests
of `burnlike.record.tensor` that pin how many passes a save or a load makes over a tensor."""

from __future__ import annotations

import pytest
import torch

from burnlike.record.tensor import precision, serial


class OpCounts(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the aten copies and min/max ops made on this thread (dispatch modes are per thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.copies = 0
        self.aminmax = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.copy_.default:
            self.copies += 1
        elif func is torch.ops.aten.aminmax.default:
            self.aminmax += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn) -> OpCounts:
    """The ops `fn()` makes on this thread."""
    with OpCounts() as ops:
        fn()
    return ops


def count_exact_passes(monkeypatch: pytest.MonkeyPatch, min_numel: int = 0) -> list[int]:
    """The sizes of the exact min/max passes `storage_dtype` makes (its fallback when a cast can't
    settle the dtype) over tensors of at least `min_numel` values, appended as they happen."""
    passes: list[int] = []
    original = precision.serial.aminmax

    def counting(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if t.numel() >= min_numel:
            passes.append(t.numel())
        return original(t)

    monkeypatch.setattr(precision.serial, "aminmax", counting)
    return passes


needs_omp = pytest.mark.skipif(serial._OMP_SET is None,
                               reason="torch's OpenMP is not reachable here: copies stay in pieces")
