"""TODO: docstring."""

import sys
import time

import pytest

from burnlike.train.metric import (
    CpuMemory,
    CpuUse,
    IterationSpeedMetric,
    MetricContext,
)


def advance_clock(seconds):
    """Busy-wait until perf_counter has moved on by `seconds` (the metric reads that clock)."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pass


@pytest.mark.parametrize("metric", ["CpuMemory", "CpuUse"])
def test_cpu_metrics_report_psutils_figures(metric):
    psutil = pytest.importorskip("psutil")  # the `system` extra
    from burnlike.train import metric as metrics
    from burnlike.train.metric import MetricContext

    m = getattr(metrics, metric)()
    value, count = m.batch_value(None, MetricContext())
    assert count == 1
    if metric == "CpuMemory":
        assert value == pytest.approx(psutil.virtual_memory().used / 1e9, rel=0.2) and m.unit == "GB"
    else:
        assert 0.0 <= value <= 100.0 and m.unit == "%"


def test_cpu_metrics_name_themselves_when_psutil_is_missing(monkeypatch):
    from burnlike.train.metric import CpuUse

    monkeypatch.setitem(__import__("sys").modules, "psutil", None)
    for metric in (CpuUse, CpuMemory):
        with pytest.raises(ImportError, match=rf"^{metric.__name__} needs psutil: "):
            metric()


def test_iteration_speed_counts_iterations_since_the_epochs_first_update():
    metric = IterationSpeedMetric()
    for _ in range(2):  # a second epoch starts over
        before = time.perf_counter()
        metric.update(None, MetricContext())  # the first update starts the clock: no speed yet
        after_first = time.perf_counter()
        advance_clock(0.005)
        before_second = time.perf_counter()
        metric.update(None, MetricContext())
        after = time.perf_counter()
        _, [(first, first_count), (second, second_count)] = metric.finish_epoch()  # Burn's log lines
        assert first == 0.0 and first_count == second_count == 1
        # 2 iterations over the time between the two reads of the clock, which lies between these
        assert 2 / (after - before) <= second <= 2 / (before_second - after_first)


def test_cpu_metrics_name_their_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # as if psutil were not installed
    for metric in (CpuUse, CpuMemory):
        with pytest.raises(ImportError, match=r"burnlike\[system\]"):
            metric()
