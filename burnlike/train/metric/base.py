"""The metric contract: one batch value and weight per step, aggregated by torchmetrics.

A burnlike `Metric` turns an output item into `(value, count)` for the batch, kept on the device
(no host sync per step). The epoch value is the count-weighted mean (Burn's numeric state), held
in a `torchmetrics.Metric` so it syncs across ranks; the per-step pairs are kept to write Burn's
`value,count` log lines once per epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torchmetrics
from torch import Tensor, nn

from burnlike.train.output import NONE

Number = Tensor | float | int


@dataclass
class MetricContext:
    """What a step knows beyond the output item (for metrics with Burn's `Input = ()`)."""

    lr: float | None = None
    iteration: int = 0


class WeightedMean(torchmetrics.Metric):
    """Count-weighted mean kept as two sums (Σ value·count, Σ count) that reduce across processes."""

    full_state_update = False
    total: Tensor
    weight: Tensor

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("weight", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, total: Number, weight: Number) -> None:  # type: ignore[override]
        self.total += total
        self.weight += weight

    def compute(self) -> Tensor:
        if self.weight <= 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return self.total / self.weight


class Metric(nn.Module):
    """Base class: set `name`, `input` (an output kind) and implement `batch_value`.

    A step only computes the batch value and appends it (a few tensor ops, no sync); the epoch
    aggregate is folded into the `WeightedMean` state at epoch end (one transfer, one collective).
    """

    name: str = "Metric"
    input: str = NONE
    unit: str = ""
    numeric: bool = True

    def __init__(self) -> None:
        super().__init__()
        self.mean = WeightedMean()
        self._history: list[tuple[Number, Number]] = []
        self._running = (0.0, 0.0, 0)  # (Σ v·c, Σ c, entries folded) for the progress display

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        raise NotImplementedError

    def update(self, item: Any, ctx: MetricContext) -> None:
        self._history.append(self.batch_value(item, ctx))

    @property
    def updated(self) -> bool:
        return bool(self._history)

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
        self.mean.update(sum(v * c for v, c in history), sum(c for _, c in history))
        value = float(self.mean.compute())
        self.reset()
        return value, history

    def reset(self) -> None:
        self.mean.reset()
        self._history = []
        self._running = (0.0, 0.0, 0)

    def clone(self) -> Metric:
        """A fresh instance with the same settings (one per split, as Burn registers them)."""
        import copy

        new = copy.deepcopy(self)
        new.reset()
        return new


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
