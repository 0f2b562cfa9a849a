"""Burn's LR schedulers: stepped once per iteration *before* the optimizer step.

Each scheduler is a pure function of the iteration number (`lr_at(k)`, k from 1), so the
Lightning adapter is a `LambdaLR` over base lr 1.0. Its state is Burn's record of the scheduler
(burn-optim `lr_scheduler/*.rs`, `LrScheduler::Record`): a constant rate records `()`, Noam its
step count, linear the iterations left, cosine its position in the cycle, exponential the last
rate, step the iteration index. `to_record()` writes it, `load_record(record)` reads one Burn wrote
(the file checkpointer's `scheduler-N`), and the schedule continues where that one was.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import torch

from burnlike.config import config

USIZE_MAX = 2**64 - 1  # Burn's cosine scheduler before its first step (`current_iter: usize::MAX`)
I32_MAX = 2**31 - 1


@runtime_checkable
class LrSchedulerConfig(Protocol):
    """What `LearnerBuilder.build` takes as a schedule: any config whose `init()` makes an `LrScheduler`."""

    def init(self) -> LrScheduler:
        """The scheduler, at its first step; raises ValueError on a setting Burn refuses."""
        ...


class SchedulerRecord:
    """How a scheduler's Burn record maps to the number of steps taken: `encode(k)` is Burn's record
    after k steps, `decode(record)` the k it stands for (None: the record holds no position). The
    default is a step count (Burn's Noam record; burnlike's own schedulers use it too)."""

    what = "the number of steps taken, an integer >= 0"

    def encode(self, k: int) -> Any:
        return k

    def decode(self, record: Any) -> int | None:
        return _integer(record, 0, None, self.what)


class _NoRecord(SchedulerRecord):
    """Burn's `()` record of a constant learning rate."""

    what = "nothing (null)"

    def encode(self, k: int) -> Any:
        return None

    def decode(self, record: Any) -> int | None:
        if record is not None:
            raise ValueError(f"expected {self.what}, got {record!r}")
        return None


class _LinearRecord(SchedulerRecord):
    """`LinearLrScheduler::remaining_iters`: `num_iters + 1` before the first step, 0 at the end."""

    def __init__(self, num_iters: int) -> None:
        self.num_iters = num_iters
        self.what = f"the iterations left, an integer from 0 to {num_iters + 1}"

    def encode(self, k: int) -> Any:
        return max(self.num_iters + 1 - k, 0)

    def decode(self, record: Any) -> int | None:
        return self.num_iters + 1 - _integer(record, 0, self.num_iters + 1, self.what)


class _CosineRecord(SchedulerRecord):
    """`CosineAnnealingLrScheduler::current_iter`: `usize::MAX` before the first step, then the
    position in the cycle of `num_iters + 1` iterations."""

    def __init__(self, num_iters: int) -> None:
        self.num_iters = num_iters
        self.what = f"the position in the cycle, an integer from 0 to {num_iters} (or usize::MAX before the first step)"

    def encode(self, k: int) -> Any:
        return USIZE_MAX if k == 0 else (k - 1) % (self.num_iters + 1)

    def decode(self, record: Any) -> int | None:
        if record == USIZE_MAX and not isinstance(record, bool):
            return 0
        return _integer(record, 0, self.num_iters, self.what) + 1


class _ExponentialRecord(SchedulerRecord):
    """`ExponentialLrScheduler::previous_lr`: the rate of the last step (`initial_lr / gamma` before
    the first)."""

    what = "the last learning rate, a number >= 0"

    def __init__(self, initial_lr: float, gamma: float) -> None:
        self.initial_lr, self.gamma = initial_lr, gamma

    def encode(self, k: int) -> Any:
        return self.initial_lr * self.gamma ** (k - 1)

    def decode(self, record: Any) -> int | None:
        if isinstance(record, bool) or not isinstance(record, (int, float)) or not record >= 0:
            raise ValueError(f"expected {self.what}, got {record!r}")
        if self.gamma == 1.0:
            return None  # every step has the same rate
        tiny = max(float(record), 5e-324)  # a rate that underflowed to 0 stays 0
        return max(round(math.log(tiny / self.initial_lr) / math.log(self.gamma)) + 1, 0)


class _StepRecord(SchedulerRecord):
    """`StepLrScheduler::iter_idx` (an i32): -1 before the first step."""

    what = "the iteration index, an integer >= -1"

    def encode(self, k: int) -> Any:
        return k - 1

    def decode(self, record: Any) -> int | None:
        return _integer(record, -1, I32_MAX, self.what) + 1


def _integer(value: Any, lo: int, hi: int | None, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        raise ValueError(f"expected {what}, got {value!r}")
    return value


class LrScheduler:
    """Burn's `LrScheduler`: `step()` returns the learning rate for the next iteration.

    `iteration` counts the steps taken; a record loaded from Burn sets where the schedule stands
    (`offset` steps ahead of `iteration` when the two must differ: a Lightning run keeps its own
    step count).

    Args:
        lr_at: The rate of the k-th step, k from 1 (a pure function: the schedule's whole logic).
        record: How Burn's record of this schedule maps to a step count (None: the count itself).
        name: Burn's type name, for messages (None: the class's).

    Attributes:
        name: Burn's type name, for messages.
        iteration: The steps taken.
        offset: How far the schedule stands ahead of `iteration` (set by a loaded record).
    """

    def __init__(self, lr_at: Callable[[int], float], record: SchedulerRecord | None = None,
                 name: str | None = None) -> None:
        self._lr_at = lr_at
        self._record = record or SchedulerRecord()
        self.name = name or type(self).__name__
        self.iteration = 0
        self.offset = 0

    def lr_at(self, k: int) -> float:
        """The rate of the k-th step (k from 1).

        Args:
            k: The step, from 1.
        """
        return float(self._lr_at(k + self.offset))

    def step(self) -> float:
        """Take a step: the learning rate for the next iteration."""
        self.iteration += 1
        return self.lr_at(self.iteration)

    def to_record(self, iteration: int | None = None) -> Any:
        """Burn's record of this scheduler after `iteration` steps.

        Args:
            iteration: The steps taken (None: `self.iteration`).
        """
        return self._record.encode((self.iteration if iteration is None else iteration) + self.offset)

    def load_record(self, record: Any, iteration: int | None = None) -> LrScheduler:
        """Continue from Burn's `record`; `iteration`: the step count the caller keeps counting from
        (a Lightning run's), else the record's.

        Args:
            record: Burn's record of this kind of scheduler (a `scheduler-N` file's item).
            iteration: The step count to keep counting from (None: the record's).

        Returns:
            This scheduler.

        Raises:
            ValueError: The record is not one of this scheduler, naming what it should be.
        """
        k = self._record.decode(record)
        if k is None:  # a record without a position (a constant rate): every step is alike
            self.iteration = self.iteration if iteration is None else iteration
            return self
        self.iteration = k if iteration is None else iteration
        self.offset = k - self.iteration
        return self

    def state_dict(self) -> dict[str, int]:
        """burnlike's own form of the state: the steps taken (and the offset a loaded record set)."""
        return {"iteration": self.iteration, **({"offset": self.offset} if self.offset else {})}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Restore what `state_dict` returned.

        Args:
            state: `{"iteration": n}`, with `"offset"` when a loaded record set one.
        """
        self.iteration = int(state["iteration"])
        self.offset = int(state.get("offset", 0))

    def torch_scheduler(self, optimizer: torch.optim.Optimizer) -> BurnLambdaLR:
        """A LambdaLR for Lightning, whose rate factor is this schedule's rate.

        Args:
            optimizer: The torch optimizer, built with lr=1.0.
        """
        return BurnLambdaLR(optimizer, self)


BURN_RECORD = "burn_record"  # in a BurnLambdaLR's state: its Burn record
RECORD_FILE = "burn_record_file"  # where that record was read from (for errors)


class BurnLambdaLR(torch.optim.lr_scheduler.LambdaLR):
    """The `LambdaLR` of a Burn schedule: step n (from 0) gets `lr_at(n + 1)`. Its state carries
    Burn's record (`BURN_RECORD`): a checkpoint's `scheduler-N` holds that, and loading one puts
    the schedule and the optimizer's current rate where the record says."""

    def __init__(self, optimizer: torch.optim.Optimizer, scheduler: LrScheduler) -> None:
        self.burn = scheduler
        super().__init__(optimizer, lambda n: scheduler.lr_at(n + 1))

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in super().state_dict().items() if k != "burn"}
        state[BURN_RECORD] = self.burn.to_record(self.last_epoch)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        has_record, record = BURN_RECORD in state, state.pop(BURN_RECORD, None)
        where = state.pop(RECORD_FILE, None)
        super().load_state_dict(state)
        if not has_record:
            return
        try:
            self.burn.load_record(record, self.last_epoch)
        except ValueError as e:
            source = f"{where}: " if where else ""
            raise ValueError(f"{source}not the record of {self.burn.name} ({e})") from None
        for group, lmbda, base in zip(self.optimizer.param_groups, self.lr_lambdas, self.base_lrs):
            lr = base * lmbda(self.last_epoch)
            if isinstance(group["lr"], torch.Tensor):
                group["lr"].fill_(lr)
            else:
                group["lr"] = lr
        self._last_lr = [g["lr"].clone() if isinstance(g["lr"], torch.Tensor) else g["lr"]
                         for g in self.optimizer.param_groups]


class ConstantLr(LrScheduler):
    """A float learning rate as a schedule: `lr` at every step (Burn's `impl LrScheduler for f64`).

    Args:
        lr: The learning rate.
    """

    def __init__(self, lr: float) -> None:
        super().__init__(lambda k: lr, _NoRecord())


def _unit_interval(name: str, what: str, value: float, low_open: bool = True) -> None:
    """Burn's range checks of a rate: (0, 1] (`low_open`) or [0, 1]."""
    ok = (0.0 < value <= 1.0) if low_open else (0.0 <= value <= 1.0)
    if not ok:
        bound = "greater than 0" if low_open else "at least 0"
        raise ValueError(f"{name}: {what} must be {bound} and at most 1, got {value}")


@config
class NoamLrSchedulerConfig:
    """Burn's Noam schedule (burn-optim `lr_scheduler/noam.rs`; "Attention Is All You Need"): a
    linear warmup over `warmup_steps`, then a decay with the inverse square root of the step,
    `factor * model_size^-0.5 * min(k^-0.5, k * warmup_steps^-1.5)`."""

    factor: float  # scales the whole schedule
    warmup_steps: int = 4000  # steps of linear warmup before the peak
    model_size: int = 512  # the model's width (d_model): the peak rate falls with its square root

    def init(self) -> LrScheduler:
        """The scheduler; raises ValueError unless `warmup_steps` and `model_size` are > 0."""
        if self.warmup_steps <= 0 or self.model_size <= 0:
            raise ValueError("NoamLrSchedulerConfig: warmup_steps and model_size must be > 0")
        scale = self.factor * self.model_size**-0.5
        return LrScheduler(lambda k: scale * min(k**-0.5, k * self.warmup_steps**-1.5), name="NoamLrScheduler")


@config
class CosineAnnealingLrSchedulerConfig:
    """Burn's cosine annealing with warm restarts (burn-optim `lr_scheduler/cosine.rs`, 0.21).

    The first iteration gets `initial_lr` (cos 0), iteration `num_iters + 1` gets `min_lr` (cos π),
    and the next one restarts at `initial_lr`: a period of `num_iters + 1` iterations. `init()`
    refuses what Burn refuses: `initial_lr` outside (0, 1], `min_lr` outside [0, initial_lr],
    `num_iters` of 0.
    """

    initial_lr: float  # the rate at the first step and at each restart, in (0, 1]
    num_iters: int  # iterations from initial_lr down to min_lr (a period is num_iters + 1)
    min_lr: float = 0.0  # the lowest rate, at the end of each period

    def init(self) -> LrScheduler:
        """The scheduler; raises ValueError on a setting Burn refuses."""
        _unit_interval("CosineAnnealingLrSchedulerConfig", "initial learning rate", self.initial_lr)
        if not 0.0 <= self.min_lr <= self.initial_lr:
            raise ValueError("CosineAnnealingLrSchedulerConfig: minimum learning rate must be at least 0 and at "
                             f"most equal to the initial learning rate, got {self.min_lr}")
        if self.num_iters <= 0:
            raise ValueError("CosineAnnealingLrSchedulerConfig.num_iters must be > 0")
        lo, hi, n = self.min_lr, self.initial_lr, self.num_iters

        def lr(k: int) -> float:
            t = (k - 1) % (n + 1)  # Burn's current_iter: 0 at the first step, restarts after num_iters
            return lo + 0.5 * (hi - lo) * (1 + math.cos(t / n * math.pi))

        return LrScheduler(lr, _CosineRecord(n), "CosineAnnealingLrScheduler")


@config
class ExponentialLrSchedulerConfig:
    """Burn's exponential schedule (burn-optim `lr_scheduler/exponential.rs`): `initial_lr` at the
    first step, times `gamma` at each next one. `init()` refuses `initial_lr` or `gamma` outside
    (0, 1], as Burn does."""

    initial_lr: float  # the rate at the first step, in (0, 1]
    gamma: float  # the factor each next step's rate is multiplied by, in (0, 1]

    def init(self) -> LrScheduler:
        """The scheduler; raises ValueError on a setting Burn refuses."""
        _unit_interval("ExponentialLrSchedulerConfig", "initial learning rate", self.initial_lr)
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"ExponentialLrSchedulerConfig.gamma must be in (0, 1], got {self.gamma}")
        return LrScheduler(lambda k: self.initial_lr * self.gamma ** (k - 1),
                           _ExponentialRecord(self.initial_lr, self.gamma), "ExponentialLrScheduler")


@config
class LinearLrSchedulerConfig:
    """Burn's linear schedule (burn-optim `lr_scheduler/linear.rs`): `initial_lr` at the first step,
    `final_lr` from step `num_iters + 1` on, Burn's arithmetic (`final_lr - step_size * remaining`).
    `init()` refuses `initial_lr` outside (0, 1], `final_lr` outside [0, 1] and `num_iters` of 0, as
    Burn does."""

    initial_lr: float  # the rate at the first step, in (0, 1]
    final_lr: float  # the rate from step num_iters + 1 on, in [0, 1]
    num_iters: int  # iterations from initial_lr to final_lr

    def init(self) -> LrScheduler:
        """The scheduler; raises ValueError on a setting Burn refuses."""
        _unit_interval("LinearLrSchedulerConfig", "initial learning rate", self.initial_lr)
        _unit_interval("LinearLrSchedulerConfig", "final learning rate", self.final_lr, low_open=False)
        if self.num_iters <= 0:
            raise ValueError("LinearLrSchedulerConfig.num_iters must be > 0")
        final, n = self.final_lr, self.num_iters
        step = (final - self.initial_lr) / n
        return LrScheduler(lambda k: final - step * max(n + 1 - k, 0), _LinearRecord(n), "LinearLrScheduler")


@config
class StepLrSchedulerConfig:
    """Burn's step schedule (burn-optim `lr_scheduler/step.rs`): `initial_lr`, multiplied by
    `gamma` every `step_size` steps."""

    initial_lr: float  # the rate of the first step_size steps
    step_size: int  # steps between two decays
    gamma: float = 0.1  # the factor applied at each decay

    def init(self) -> LrScheduler:
        """The scheduler; raises ValueError unless `step_size` is > 0."""
        if self.step_size <= 0:
            raise ValueError("StepLrSchedulerConfig.step_size must be > 0")
        return LrScheduler(lambda k: self.initial_lr * self.gamma ** ((k - 1) // self.step_size), _StepRecord(),
                           "StepLrScheduler")
