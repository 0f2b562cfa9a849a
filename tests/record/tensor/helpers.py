"""TODO: docstring."""

import pytest
import torch


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


def _copies(fn) -> int:
    return count_ops(fn).copies


needs_omp = pytest.mark.skipif(__import__("burnlike.record.tensor.serial", fromlist=["_"])._OMP_SET is None,
                               reason="torch's OpenMP is not reachable here: copies stay in pieces")
