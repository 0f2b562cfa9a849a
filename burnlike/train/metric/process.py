"""Metrics that need nothing from the output (Burn's `Input = ()`): learning rate, speed, CPU.

Their directions are Burn's `NumericAttributes::higher_is_better` (burn-train `metric/learning_rate.rs`,
`iteration.rs`, `cpu_use.rs`, `memory_use.rs`): a higher iteration speed is better; a higher learning
rate, CPU use or memory is not.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import NONE


class LearningRateMetric(Metric):
    """`Learning Rate`: the optimizer's learning rate at each step (not higher-is-better, as Burn's)."""

    name = "Learning Rate"
    input = NONE
    higher_is_better = False

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        return (ctx.lr if ctx.lr is not None else float("nan")), 1


class IterationSpeedMetric(Metric):
    """`Iteration Speed` in iter/sec since the first update of the epoch."""

    name = "Iteration Speed"
    input = NONE
    unit = "iter/sec"
    higher_is_better = True

    def __init__(self) -> None:
        super().__init__()
        self._start: float | None = None
        self._iters = 0

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        now = time.perf_counter()
        if self._start is None:
            self._start = now
        self._iters += 1
        elapsed = now - self._start
        return (self._iters / elapsed if elapsed > 0 else 0.0), 1

    def reset(self) -> None:  # also at each epoch's end (Metric.finish_epoch resets)
        super().reset()
        self._start, self._iters = None, 0


def _psutil(metric: str) -> ModuleType:
    """psutil, an optional dependency: fail at construction, not mid-epoch, naming the extra."""
    try:
        import psutil
    except ImportError as e:
        raise ImportError(f"{metric} needs psutil: pip install 'burnlike[system]' (or pip install psutil)") from e
    module: ModuleType = psutil
    return module


class CpuUse(Metric):
    """`CPU Usage` in % of all cores since the previous step (extra `system`: psutil)."""

    name = "CPU Usage"
    unit = "%"
    higher_is_better = False

    def __init__(self) -> None:
        super().__init__()
        self._psutil = _psutil("CpuUse")
        self._psutil.cpu_percent(None)

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        return float(self._psutil.cpu_percent(None)), 1


class CpuMemory(Metric):
    """`CPU Memory` used, in GB (extra `system`: psutil)."""

    name = "CPU Memory"
    unit = "GB"
    higher_is_better = False

    def __init__(self) -> None:
        super().__init__()
        self._psutil = _psutil("CpuMemory")

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        return self._psutil.virtual_memory().used / 1e9, 1
