"""`burnlike.train.renderer.cli`: `CliMetricsRenderer` prints each step's progress item on a line."""

from __future__ import annotations

import io
import sys

from burnlike.data.dataloader import Progress
from burnlike.train.renderer.base import EvaluationProgress, TrainingProgress
from burnlike.train.renderer.cli import CliMetricsRenderer


def test_the_cli_renderer_prints_each_test_progress(capsys):
    CliMetricsRenderer().render_test(EvaluationProgress(Progress(16, 40), 1), [])
    assert capsys.readouterr().out == f"{EvaluationProgress(Progress(16, 40), 1)}\n"


def test_each_progress_line_reaches_a_file_stdout_at_once(monkeypatch):
    """Under a job scheduler stdout is a file, block-buffered: each line is flushed as printed, so
    the log shows where the run is (and what it reached before it was killed)."""
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(raw, buffer_size=1 << 16), encoding="utf-8"))
    renderer = CliMetricsRenderer()
    train, test = TrainingProgress(Progress(16, 40), Progress(1, 2), 1), EvaluationProgress(Progress(8, 40), 1)
    renderer.render_train(train, [])
    assert raw.getvalue().decode() == f"{train}\n"
    renderer.render_valid(train, [])
    assert raw.getvalue().decode() == f"{train}\n" * 2
    renderer.render_test(test, [])
    assert raw.getvalue().decode() == f"{train}\n" * 2 + f"{test}\n"
