"""`burnlike.train.renderer.cli`: `CliMetricsRenderer` prints each step's progress item on a line."""

from __future__ import annotations

from burnlike.data.dataloader import Progress
from burnlike.train.renderer.base import EvaluationProgress
from burnlike.train.renderer.cli import CliMetricsRenderer


def test_the_cli_renderer_prints_each_test_progress(capsys):
    CliMetricsRenderer().render_test(EvaluationProgress(Progress(16, 40), 1), [])
    assert capsys.readouterr().out == f"{EvaluationProgress(Progress(16, 40), 1)}\n"
