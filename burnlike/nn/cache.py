"""Burn's `TensorCache` (burn-nn `modules/cache/`): what an autoregressive inference step keeps of the
previous steps, so that each new token computes only its own row."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


class TensorCache:
    """An empty cache, then the last output of the function it wraps."""

    def __init__(self) -> None:
        self.state: Tensor | None = None

    @classmethod
    def empty(cls) -> TensorCache:
        return cls()

    def forward_autoregressive(self, tensor: Tensor, dim_cat: int, func: Callable[[Tensor], Tensor]) -> Tensor:
        """The first call: `func(tensor)`; later ones: `func` of the last position `[B, 1, d]` only,
        concatenated along `dim_cat` to what the cache holds."""
        if self.state is None:
            out = func(tensor)
        else:
            out = torch.cat([self.state, func(tensor[:, -1:, :])], dim=dim_cat)
        self.state = out
        return out

    def forward_full(self, tensor: Tensor, func: Callable[[Tensor], Tensor]) -> Tensor:
        """`func(tensor)` once; the same result afterwards (cross-attention's keys and values)."""
        if self.state is None:
            self.state = func(tensor)
        return self.state
