"""Burn's LR schedulers: stepped once per iteration *before* the optimizer step.

Each scheduler is a pure function of the iteration number (`lr_at(k)`, k from 1), so the
Lightning adapter is a `LambdaLR` over base lr 1.0 and checkpoints need no extra state.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import torch

from burnlike.config import config


@runtime_checkable
class LrSchedulerConfig(Protocol):
    def init(self) -> LrScheduler: ...


class LrScheduler:
    """Burn's `LrScheduler`: `step()` returns the learning rate for the next iteration."""

    def __init__(self, lr_at: object) -> None:
        self._lr_at = lr_at
        self.iteration = 0

    def lr_at(self, k: int) -> float:
        return float(self._lr_at(k))  # type: ignore[operator]

    def step(self) -> float:
        self.iteration += 1
        return self.lr_at(self.iteration)

    def state_dict(self) -> dict[str, int]:
        return {"iteration": self.iteration}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.iteration = int(state["iteration"])

    def torch_scheduler(self, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LambdaLR:
        """A LambdaLR for Lightning: call it with the optimizer built with lr=1.0."""
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda n: self.lr_at(n + 1))


class ConstantLr(LrScheduler):
    def __init__(self, lr: float) -> None:
        super().__init__(lambda k: lr)


@config
class NoamLrSchedulerConfig:
    factor: float
    warmup_steps: int = 4000
    model_size: int = 512

    def init(self) -> LrScheduler:
        if self.warmup_steps <= 0 or self.model_size <= 0:
            raise ValueError("NoamLrSchedulerConfig: warmup_steps and model_size must be > 0")
        scale = self.factor * self.model_size**-0.5
        return LrScheduler(lambda k: scale * min(k**-0.5, k * self.warmup_steps**-1.5))


@config
class CosineAnnealingLrSchedulerConfig:
    """Burn's cosine annealing with warm restarts (burn-optim `lr_scheduler/cosine.rs`, 0.21).

    The first iteration gets `initial_lr` (cos 0), iteration `num_iters + 1` gets `min_lr` (cos π),
    and the next one restarts at `initial_lr`: a period of `num_iters + 1` iterations. `init()`
    refuses what Burn refuses: `initial_lr` outside (0, 1], `min_lr` outside [0, initial_lr],
    `num_iters` of 0.
    """

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def init(self) -> LrScheduler:
        if not 0.0 < self.initial_lr <= 1.0:
            raise ValueError("CosineAnnealingLrSchedulerConfig: initial learning rate must be greater than 0 "
                             f"and at most 1, got {self.initial_lr}")
        if not 0.0 <= self.min_lr <= self.initial_lr:
            raise ValueError("CosineAnnealingLrSchedulerConfig: minimum learning rate must be at least 0 and at "
                             f"most equal to the initial learning rate, got {self.min_lr}")
        if self.num_iters <= 0:
            raise ValueError("CosineAnnealingLrSchedulerConfig.num_iters must be > 0")
        lo, hi, n = self.min_lr, self.initial_lr, self.num_iters

        def lr(k: int) -> float:
            t = (k - 1) % (n + 1)  # Burn's current_iter: 0 at the first step, restarts after num_iters
            return lo + 0.5 * (hi - lo) * (1 + math.cos(t / n * math.pi))

        return LrScheduler(lr)


@config
class ExponentialLrSchedulerConfig:
    initial_lr: float
    gamma: float

    def init(self) -> LrScheduler:
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"ExponentialLrSchedulerConfig.gamma must be in (0, 1], got {self.gamma}")
        return LrScheduler(lambda k: self.initial_lr * self.gamma ** (k - 1))


@config
class LinearLrSchedulerConfig:
    initial_lr: float
    final_lr: float
    num_iters: int

    def init(self) -> LrScheduler:
        if self.num_iters <= 0:
            raise ValueError("LinearLrSchedulerConfig.num_iters must be > 0")
        step = (self.final_lr - self.initial_lr) / self.num_iters
        return LrScheduler(
            lambda k: self.initial_lr + (k - 1) * step if k <= self.num_iters else self.final_lr
        )


@config
class StepLrSchedulerConfig:
    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def init(self) -> LrScheduler:
        if self.step_size <= 0:
            raise ValueError("StepLrSchedulerConfig.step_size must be > 0")
        return LrScheduler(lambda k: self.initial_lr * self.gamma ** ((k - 1) // self.step_size))
