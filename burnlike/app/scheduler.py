"""The app's `scheduler=` options: the learning rate over the run, built as Burn's LR scheduler
configs from the option, `optimizer.lr` (the peak) and the run's iterations.

No option (the default, `scheduler: null`) keeps `optimizer.lr` constant, as Burn's `build(model,
optim, lr)` with a float does. `scheduler=cosine` is Burn's cosine annealing from `optimizer.lr` to
`min_lr`; `scheduler=warmup_cosine` is nanoGPT's linear warmup then cosine decay, held at `min_lr`
after (`burnlike.optim.warmup_cosine`). Iterations are batches: Burn steps its scheduler every batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from burnlike.config import config

if TYPE_CHECKING:  # pragma: no cover
    from burnlike.train.components import LrOrScheduler

__all__ = ["CosineScheduler", "WarmupCosineScheduler", "learning_rate"]


@config
class CosineScheduler:
    """`scheduler=cosine`: Burn's `CosineAnnealingLrSchedulerConfig(optimizer.lr, num_iters, min_lr)`."""

    min_lr: float = 0.0  # the learning rate the cosine ends at
    num_iters: int | None = None  # null: the run's iterations

    def scheduler(self, lr: float, iterations: int) -> LrOrScheduler:
        """The scheduler's config, from `lr` down to `min_lr`.

        Args:
            lr: The initial learning rate (`optimizer.lr`).
            iterations: The run's training iterations (used when `num_iters` is null).
        """
        from burnlike.optim import CosineAnnealingLrSchedulerConfig

        return CosineAnnealingLrSchedulerConfig(lr, self.num_iters or iterations, self.min_lr)


@config
class WarmupCosineScheduler:
    """`scheduler=warmup_cosine`: `warmup_iters` steps of linear warmup to `optimizer.lr`, then a cosine
    down to `min_lr` at iteration `decay_iters`, then `min_lr` (nanoGPT's `get_lr`)."""

    warmup_iters: int = 100  # iterations of linear warmup, from optimizer.lr / (warmup_iters + 1) up to optimizer.lr
    decay_iters: int | None = None  # the iteration the cosine reaches min_lr; null: the run's last
    min_lr: float = 0.0  # the learning rate at decay_iters and after

    def scheduler(self, lr: float, iterations: int) -> LrOrScheduler:
        """The scheduler's config: the warmup up to `lr`, then the cosine.

        Args:
            lr: The peak learning rate (`optimizer.lr`).
            iterations: The run's training iterations (used when `decay_iters` is null).
        """
        from burnlike.optim import warmup_cosine

        return warmup_cosine(lr, self.warmup_iters, self.decay_iters or iterations, self.min_lr)


def learning_rate(scheduler: object, lr: float, iterations: int) -> LrOrScheduler:
    """What `build(model, optim, lr_or_scheduler)` gets: `lr` without a scheduler option, else the
    option's scheduler config, checked now (`init()`), so a bad value fails before training.

    Args:
        scheduler: The `scheduler` option (a config with a `scheduler(lr, iterations)` method), or None.
        lr: The learning rate (`optimizer.lr`).
        iterations: The run's training iterations.
    """
    if scheduler is None:
        return lr
    built = getattr(scheduler, "scheduler")(lr, iterations)  # noqa: B009 - any option's method
    built.init()
    return built  # type: ignore[no-any-return]
