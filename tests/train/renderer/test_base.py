"""`burnlike.train.renderer.base`: Burn's renderer traits. The evaluation's default end prints the
summary and flushes it: under a job scheduler stdout is a file, and the summary must be in it
before the process goes on (or is killed)."""

from __future__ import annotations

import io
import sys

from burnlike.train import LearnerSummary
from burnlike.train.renderer.cli import CliMetricsRenderer
from burnlike.train.summary import MetricSummary


def test_the_default_test_end_prints_the_summary_through_to_the_file(monkeypatch):
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(io.BufferedWriter(raw, buffer_size=1 << 16), encoding="utf-8")  # like a file's
    monkeypatch.setattr(sys, "stdout", stdout)
    summary = LearnerSummary(1, [MetricSummary("test", "Loss", 0.5, 1, 0.5, 1)])
    CliMetricsRenderer().on_test_end(summary)
    assert raw.getvalue().decode() == f"{summary}\n"
