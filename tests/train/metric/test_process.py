"""`burnlike.train.metric.process`: the metrics that need nothing from the output. CPU use and
memory report psutil's figures, and without psutil they say which package and which burnlike extra
to install; the iteration speed counts from the epoch's first update (a new epoch starts over)."""

import sys
import time

import pytest

from burnlike.train import metric as metrics
from burnlike.train.metric import CpuMemory, CpuUse, IterationSpeedMetric, MetricContext


def advance_clock(seconds):
    """Busy-wait until perf_counter has moved on by `seconds` (the metric reads that clock)."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pass


# --- CPU use and memory ---------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["CpuMemory", "CpuUse"])
def test_cpu_metrics_report_psutils_figures(metric):
    psutil = pytest.importorskip("psutil")  # the `system` extra
    m = getattr(metrics, metric)()
    value, count = m.batch_value(None, MetricContext())
    assert count == 1
    if metric == "CpuMemory":
        assert value == pytest.approx(psutil.virtual_memory().used / 1e9, rel=0.2) and m.unit == "GB"
    else:
        assert 0.0 <= value <= 100.0 and m.unit == "%"


def test_cpu_metrics_without_psutil_name_themselves_and_their_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # as if psutil were not installed
    for metric in (CpuUse, CpuMemory):
        with pytest.raises(ImportError, match=rf"^{metric.__name__} needs psutil: .*burnlike\[system\]"):
            metric()


# --- iteration speed ------------------------------------------------------------------------------
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
