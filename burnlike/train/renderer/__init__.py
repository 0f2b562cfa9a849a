"""Burn's `burn::train::renderer`: the metrics renderer traits and their data (`base`), Burn's CLI
renderer (`cli`), and burnlike's progress displays (`display`: the live view on a terminal, plain
lines elsewhere), which a fit shows unless `.renderer(r)` gives it a renderer of its own.
"""

from burnlike.train.renderer.base import (
    EvaluationName,
    EvaluationProgress,
    MetricsRenderer,
    MetricsRendererEvaluation,
    MetricsRendererTraining,
    MetricState,
    ProgressType,
    TrainingProgress,
)
from burnlike.train.renderer.cli import CliMetricsRenderer
from burnlike.train.renderer.display import BurnProgressBar, PlainProgress, progress_display

__all__ = [
    "BurnProgressBar",
    "CliMetricsRenderer",
    "EvaluationName",
    "EvaluationProgress",
    "MetricState",
    "MetricsRenderer",
    "MetricsRendererEvaluation",
    "MetricsRendererTraining",
    "PlainProgress",
    "ProgressType",
    "TrainingProgress",
    "progress_display",
]
