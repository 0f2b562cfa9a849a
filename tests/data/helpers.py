"""Helpers for the tests of `burnlike.data`: a torch-call recorder to see how batches move and pin."""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode


class TorchCalls(TorchFunctionMode):
    """Records torch calls (name, args, kwargs); `pin_memory` is answered with a marked copy, since
    pinning needs an accelerator this machine may not have."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple, dict]] = []
        self.pinned: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        self.calls.append((name, args, kwargs))
        if name == "pin_memory":
            out = args[0].clone()
            self.pinned.append(out)
            return out
        return func(*args, **kwargs)

    def named(self, name: str) -> list[tuple[tuple, dict]]:
        return [(a, k) for n, a, k in self.calls if n == name]
