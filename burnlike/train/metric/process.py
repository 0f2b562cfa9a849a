"""Metrics that need nothing from the output (Burn's `Input = ()`): learning rate, speed, CPU.

None of them has a direction (`higher_is_better = None`): they describe the run, they don't score it.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import NONE


class LearningRateMetric(Metric):
    name = "Learning Rate"
    input = NONE

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        return (ctx.lr if ctx.lr is not None else float("nan")), 1


class IterationSpeedMetric(Metric):
    """`Iteration Speed` in iter/sec since the first update of the epoch."""

    name = "Iteration Speed"
    input = NONE
    unit = "iter/sec"

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

    def __init__(self) -> None:
        super().__init__()
        self._psutil = _psutil("CpuMemory")

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        return self._psutil.virtual_memory().used / 1e9, 1
