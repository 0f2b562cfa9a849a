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
        """What the cache holds: None until the first call."""

    @classmethod
    def empty(cls) -> TensorCache:
        """Burn's `TensorCache::empty()`: an empty cache."""
        return cls()

    def forward_autoregressive(self, tensor: Tensor, dim_cat: int, func: Callable[[Tensor], Tensor]) -> Tensor:
        """The first call: `func(tensor)`; later ones: `func` of the last position `[B, 1, d]` only,
        concatenated along `dim_cat` to what the cache holds.

        Args:
            tensor: The sequence so far, `[B, L, d]`.
            dim_cat: The dimension `func`'s outputs grow along (the sequence's, in them).
            func: The computation to cache.

        Returns:
            `func(tensor)`, computed for the last position only.
        """
        if self.state is None:
            out = func(tensor)
        else:
            out = torch.cat([self.state, func(tensor[:, -1:, :])], dim=dim_cat)
        self.state = out
        return out

    def forward_full(self, tensor: Tensor, func: Callable[[Tensor], Tensor]) -> Tensor:
        """`func(tensor)` once; the same result afterwards (cross-attention's keys and values).

        Args:
            tensor: The input, the same at every call.
            func: The computation to cache.
        """
        if self.state is None:
            self.state = func(tensor)
        return self.state
