"""The metric contract: one batch value and weight per step, aggregated by torchmetrics.

A burnlike `Metric` turns an output item into `(value, count)` for the batch, kept on the device
(no host sync per step). The epoch value is the count-weighted mean (Burn's numeric state), folded
into a `torchmetrics.MeanMetric` at epoch end so it syncs across ranks; the per-step pairs are kept
to write Burn's `value,count` log lines once per epoch.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn
from torchmetrics import MeanMetric

from burnlike.train.output import NONE

Number = Tensor | float | int


@dataclass
class MetricContext:
    """What a step knows beyond the output item (for metrics with Burn's `Input = ()`)."""

    lr: float | None = None  # the learning rate of the step, None when unknown
    iteration: int = 0  # the global step's index


def weighted_mean() -> MeanMetric:
    """Σ value·count / Σ count in float64, summed across processes on `compute()`.

    A NaN step makes the epoch NaN, as in Burn: `nan_strategy` "warn"/"ignore" would drop it and
    "disable" drops the weights too (torchmetrics 1.9), so NaN is "replaced" by NaN."""
    mean = MeanMetric(nan_strategy=float("nan"))
    mean.set_dtype(torch.float64)
    return mean


class Metric(nn.Module):
    """Base class: set `name`, `input` (an output kind), `higher_is_better`; implement `batch_value`.

    A step only computes the batch value and appends it (a few tensor ops, no sync); the epoch
    aggregate is folded into the `MeanMetric` state at epoch end (one transfer, one collective).
    `higher_is_better` is the metric's direction, as torchmetrics declares it: True, False, or
    None where neither is better (learning rate, speed); the metric store keeps it for the
    checkpointing and early-stopping strategies, the summary and the app's result.
    """

    name: str = "Metric"
    """The metric's name as Burn prints and logs it (`"Accuracy"`, the folder of its log files)."""
    input: str = NONE
    """The kind of output item it reads (`burnlike.train.output`'s `LOSS`, `ACCURACY`, ...), which
    the Learner checks against the outputs' `provides` before training."""
    unit: str = ""
    """The unit shown after the value (`"%"`), or none."""
    numeric: bool = True
    """Whether its values are numbers (every burnlike metric's are)."""
    higher_is_better: ClassVar[bool | None] = None
    """The metric's direction: True, False, or None where neither is better."""

    def __init__(self) -> None:
        super().__init__()
        self.mean = weighted_mean()
        """The epoch aggregate (a float64 `MeanMetric`), summed across processes at epoch end."""
        self._history: list[tuple[Number, Number]] = []
        self._running = (0.0, 0.0, 0)  # (Σ v·c, Σ c, entries folded) for the progress display

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        """The batch's value and its weight in the epoch's mean (what a metric implements); tensors
        stay on the device.

        Args:
            item: The step's output item (`ClassificationOutput`, ...).
            ctx: What the step knows beyond it (the learning rate, the iteration).

        Returns:
            `(value, count)`: Burn's numeric entry for the step.
        """
        raise NotImplementedError

    def update(self, item: Any, ctx: MetricContext) -> None:
        """Add a step: its `batch_value` is kept for the epoch (no host sync).

        Args:
            item: The step's output item.
            ctx: What the step knows beyond it.
        """
        self._history.append(self.batch_value(item, ctx))

    @property
    def updated(self) -> bool:
        """Whether the epoch under way has steps."""
        return bool(self._history)

    @property
    def num_steps(self) -> int:
        """The steps held for the epoch under way."""
        return len(self._history)

    def running(self) -> float:
        """Current epoch mean; folds only the steps since the last call (one small host sync)."""
        total, weight, done = self._running
        new = _to_host(self._history[done:])
        total += sum(v * c for v, c in new)
        weight += sum(c for _, c in new)
        self._running = (total, weight, len(self._history))
        return total / weight if weight else float("nan")

    def finish_epoch(self) -> tuple[float, list[tuple[float, float]]]:
        """Epoch value (synced across ranks) and this rank's per-step `(value, count)` pairs."""
        history = _to_host(self._history)
        value = self.synced_mean(history)
        self.reset()
        return value, history

    def synced_mean(self, pairs: list[tuple[float, float]]) -> float:
        """Σ value·count / Σ count over `pairs` and every other rank's (Burn's epoch aggregate of the
        logged entries, `metric/store/aggregate.rs`), in float64.

        Args:
            pairs: This rank's `(value, count)` steps.
        """
        values = torch.tensor([v for v, _ in pairs], dtype=torch.float64, device=self.mean.device)
        counts = torch.tensor([c for _, c in pairs], dtype=torch.float64, device=self.mean.device)
        # a module's .to(device) resets torchmetrics' dtype to float32, and MeanMetric casts each
        # update to it: set float64 again so the epoch sum is Burn's f64 sum
        self.mean.set_dtype(torch.float64)
        self.mean.update(values, weight=counts)
        value = float(self.mean.compute())
        self.mean.reset()
        return value

    def host_history(self) -> list[tuple[float, float]]:
        """This epoch's `(value, count)` steps so far, as Python floats (one transfer)."""
        return _to_host(self._history)

    def restore_history(self, steps: list[tuple[float, float]]) -> None:
        """Continue an epoch from a checkpoint: its steps so far, then the resumed ones.

        Args:
            steps: The `(value, count)` steps the checkpoint holds for the epoch under way.
        """
        self.reset()
        self._history = list(steps)

    def reset(self) -> None:
        """Forget the epoch under way's steps."""
        self.mean.reset()
        self._history = []
        self._running = (0.0, 0.0, 0)

    def clone(self) -> Metric:
        """A fresh instance with the same settings (one per split, as Burn registers them)."""
        new = copy.deepcopy(self)
        new.reset()
        return new


def steps_since(metrics: Sequence[Metric], starts: Sequence[int]) -> list[list[tuple[float, float]]]:
    """Each metric's `(value, count)` steps from its index in `starts` on, as Python floats, with one
    transfer for all of them (what a metrics renderer shows of each step)."""
    parts = [m._history[start:] for m, start in zip(metrics, starts)]
    flat = _to_host([pair for part in parts for pair in part])
    out, i = [], 0
    for part in parts:
        out.append(flat[i:i + len(part)])
        i += len(part)
    return out


def _to_host(history: list[tuple[Number, Number]]) -> list[tuple[float, float]]:
    values = _floats([v for v, _ in history])
    counts = _floats([c for _, c in history])
    return list(zip(values, counts))


def _floats(xs: list[Number]) -> list[float]:
    """Python floats from a mix of numbers and device scalars, with one transfer for the tensors."""
    out = [float(x) if not isinstance(x, Tensor) else 0.0 for x in xs]
    idx = [i for i, x in enumerate(xs) if isinstance(x, Tensor)]
    if idx:
        stacked = torch.stack([xs[i].detach().reshape(()).to(torch.float64) for i in idx])  # type: ignore[union-attr]
        for i, v in zip(idx, stacked.tolist()):
            out[i] = v
    return out

