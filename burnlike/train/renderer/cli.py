"""Burn's `CliMetricsRenderer` (burn-train `renderer/cli.rs`): prints each step's progress."""

from __future__ import annotations

from burnlike.train.metric.entry import MetricDefinition
from burnlike.train.renderer.base import (
    EvaluationName,
    EvaluationProgress,
    MetricsRenderer,
    MetricState,
    ProgressType,
    TrainingProgress,
)

__all__ = ["CliMetricsRenderer"]


class CliMetricsRenderer(MetricsRenderer):
    """Prints every train, valid and test step's progress on a line (Burn's debug form of the
    item); the metric states are not shown."""

    def update_train(self, state: MetricState) -> None:
        pass

    def update_valid(self, state: MetricState) -> None:
        pass

    def render_train(self, item: TrainingProgress, progress_indicators: list[ProgressType]) -> None:
        print(item, flush=True)

    def render_valid(self, item: TrainingProgress, progress_indicators: list[ProgressType]) -> None:
        print(item, flush=True)

    def update_test(self, name: EvaluationName, state: MetricState) -> None:
        pass

    def render_test(self, item: EvaluationProgress, progress_indicators: list[ProgressType]) -> None:
        print(item, flush=True)

    def manual_close(self) -> None:
        pass

    def register_metric(self, definition: MetricDefinition) -> None:
        pass
