"""`burnlike.nn.cache`: Burn's `TensorCache` (burn-nn `modules/cache/autoregressive.rs`, v0.21.0)."""

from __future__ import annotations

import torch

from burnlike.nn import TensorCache


def test_autoregressive_computes_the_last_position_only_and_concatenates():
    calls: list[tuple[int, ...]] = []

    def double(t: torch.Tensor) -> torch.Tensor:
        calls.append(tuple(t.shape))
        return t * 2

    cache = TensorCache.empty()
    first = cache.forward_autoregressive(torch.ones(2, 3, 4), 1, double)
    second = cache.forward_autoregressive(torch.arange(32.0).reshape(2, 4, 4), 1, double)
    assert calls == [(2, 3, 4), (2, 1, 4)]
    assert second.shape == (2, 4, 4) and torch.equal(second[:, :3], first)
    assert torch.equal(second[:, 3], torch.arange(32.0).reshape(2, 4, 4)[:, 3] * 2)


def test_full_computes_once():
    cache = TensorCache()
    first = cache.forward_full(torch.ones(1, 2, 2), lambda t: t + 1)
    assert cache.forward_full(torch.zeros(1, 5, 2), lambda t: t - 1) is first
