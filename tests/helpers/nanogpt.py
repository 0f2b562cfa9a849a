"""nanoGPT's learning-rate schedule, written from its train.py, to check burnlike's against (the tests)
and to drive the hand-written loop of `benchmarks/recipes.py`."""

from __future__ import annotations

import math


def get_lr(it: int, learning_rate: float, min_lr: float, warmup_iters: int, lr_decay_iters: int) -> float:
    """nanoGPT train.py's `get_lr(it)`, `it` from 0: linear warmup, cosine decay, then `min_lr`."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * decay_ratio)) * (learning_rate - min_lr)
