"""Burn's `SequentialLrSchedulerConfig { schedulers, milestones }` (burn-optim
`lr_scheduler/sequential.rs`): schedulers one after another. Milestone `m` is the number of steps
done when the next scheduler takes over, and each scheduler starts from its own first step.

Warmup then cosine decay, nanoGPT's schedule, is `SequentialLrSchedulerConfig([Linear(lr / (w + 1),
lr, w), Cosine(lr, d - w, min_lr), min_lr], [w, d + 1])`; `warmup_cosine(...)` writes it. A number
among the schedulers is Burn's `LrSchedulerConfig::Constant(lr)`. The JSON is Burn's:
`{"schedulers": [{"Linear": {...}}, {"Constant": 0.0001}], "milestones": [100]}`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from burnlike.config import ConfigError
from burnlike.optim.lr_composed import (
    _VARIANTS,
    BurnJson,
    ComposedLrSchedulerConfig,
    from_variant,
    to_variant,
)
from burnlike.optim.lr_scheduler import (
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
)

__all__ = ["SequentialLrSchedulerConfig", "warmup_cosine"]


@dataclass
class SequentialLrSchedulerConfig(BurnJson):
    """Burn's sequential schedule: each scheduler in turn, the next taking over at its milestone."""

    schedulers: list[Any] = field(default_factory=list)  # scheduler configs in order; a number is a constant rate
    milestones: list[int] = field(default_factory=list)  # steps done when each next scheduler takes over (one fewer)

    def init(self) -> LrScheduler:
        """Refuses what Burn refuses, with Burn's messages: no scheduler, a milestone count other than
        one less than the schedulers', milestones not > 0 and strictly increasing."""
        if not self.schedulers:
            raise ValueError("SequentialLrSchedulerConfig: At least one scheduler is required")
        if len(self.milestones) + 1 != len(self.schedulers):
            raise ValueError("SequentialLrSchedulerConfig: The number of milestones must be one less than the "
                             "number of schedulers")
        milestones = [int(m) for m in self.milestones]
        if any(m <= 0 or (i and m <= milestones[i - 1]) for i, m in enumerate(milestones)):
            raise ValueError("SequentialLrSchedulerConfig: Milestones must be greater than zero and strictly increasing")
        parts = [_constant(s) if isinstance(s, (int, float)) else s.init() for s in self.schedulers]
        starts = [0, *milestones]

        def lr(k: int) -> float:  # k: this step, from 1; k - 1 steps are done
            index = bisect.bisect_right(milestones, k - 1)
            return parts[index].lr_at(k - starts[index])

        return LrScheduler(lr)

    # Burn's JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Burn's JSON shape: `{"schedulers": [{"Linear": {...}}, {"Constant": 0.0001}], "milestones": [100]}`."""
        return {"schedulers": [to_variant(s, "SequentialLrSchedulerConfig", _SEQUENCE_VARIANTS)
                               for s in self.schedulers],
                "milestones": [int(m) for m in self.milestones]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SequentialLrSchedulerConfig:
        """The config of Burn's JSON shape (`to_dict`'s).

        Args:
            data: The parsed JSON.

        Raises:
            ConfigError: An entry or the milestones are not what Burn writes, named by their place.
        """
        schedulers = [from_variant(entry, f"SequentialLrSchedulerConfig: schedulers[{i}]", _SEQUENCE_VARIANTS)
                      for i, entry in enumerate(data.get("schedulers", []))]
        milestones = data.get("milestones", [])
        if not isinstance(milestones, list) or any(isinstance(m, bool) or not isinstance(m, int) for m in milestones):
            raise ConfigError(f"SequentialLrSchedulerConfig: milestones must be a list of integers, got {milestones!r}")
        return cls(schedulers, list(milestones))


# Burn's LrSchedulerConfig variants a sequence can hold
_SEQUENCE_VARIANTS: dict[str, type] = {"Constant": float, **_VARIANTS, "Composed": ComposedLrSchedulerConfig,
                                       "Sequential": SequentialLrSchedulerConfig}


def _constant(lr: float) -> LrScheduler:
    return LrScheduler(lambda k: float(lr))


def warmup_cosine(lr: float, warmup_iters: int, decay_iters: int, min_lr: float = 0.0) -> SequentialLrSchedulerConfig:
    """nanoGPT's schedule (its `get_lr(it)`, it = step - 1): `lr * step / (warmup_iters + 1)` for the
    first `warmup_iters` steps, then a cosine from `lr` to `min_lr` reached at step `decay_iters + 1`,
    then `min_lr`. Without warmup, the cosine starts at the first step.

    Args:
        lr: The peak learning rate, reached at the end of the warmup.
        warmup_iters: Steps of linear warmup (0: none).
        decay_iters: The step count at which the cosine reaches `min_lr` (> `warmup_iters`).
        min_lr: The rate at the end of the cosine and after.

    Raises:
        ValueError: `warmup_iters` < 0, or `decay_iters` not above it.
    """
    if isinstance(warmup_iters, bool) or not isinstance(warmup_iters, int) or warmup_iters < 0:
        raise ValueError(f"warmup_cosine: warmup_iters must be an integer >= 0, got {warmup_iters!r}")
    if isinstance(decay_iters, bool) or not isinstance(decay_iters, int) or decay_iters <= warmup_iters:
        raise ValueError(f"warmup_cosine: decay_iters must be an integer > warmup_iters={warmup_iters}, "
                         f"got {decay_iters!r}")
    cosine = CosineAnnealingLrSchedulerConfig(lr, decay_iters - warmup_iters, min_lr)
    if warmup_iters == 0:
        return SequentialLrSchedulerConfig([cosine, min_lr], [decay_iters + 1])
    warmup = LinearLrSchedulerConfig(lr / (warmup_iters + 1), lr, warmup_iters)
    return SequentialLrSchedulerConfig([warmup, cosine, min_lr], [warmup_iters, decay_iters + 1])
