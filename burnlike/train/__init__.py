"""Burn's `burn::train`: steps, outputs, LearnerBuilder → Learner, on a lightning.Trainer.

Names are resolved lazily, so `burnlike.train.step`/`output` (used by models) import without
Lightning; `from burnlike.train import LearnerBuilder` loads it on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "LearnerBuilder": "builder",
    "CheckpointingStrategy": "checkpoint",
    "ComposedCheckpointingStrategy": "checkpoint",
    "KeepLastNCheckpoints": "checkpoint",
    "MetricCheckpointingStrategy": "checkpoint",
    "MetricEarlyStoppingStrategy": "checkpoint",
    "StoppingCondition": "checkpoint",
    "Learner": "learner",
    "TrainingResult": "learner",
    "MetricInputError": "module",
    "StepModule": "module",
    "ClassificationOutput": "output",
    "Aggregate": "metric.store",
    "Direction": "metric.store",
    "MetricStore": "metric.store",
    "Split": "metric.store",
    "MultiLabelClassificationOutput": "output",
    "RegressionOutput": "output",
    "Gradients": "step",
    "TrainOutput": "step",
    "TrainStep": "step",
    "ValidStep": "step",
    "backward": "step",
    "LearnerSummary": "summary",
}

__all__ = [
    "Aggregate",
    "CheckpointingStrategy",
    "ClassificationOutput",
    "ComposedCheckpointingStrategy",
    "Direction",
    "Gradients",
    "KeepLastNCheckpoints",
    "Learner",
    "LearnerBuilder",
    "LearnerSummary",
    "MetricCheckpointingStrategy",
    "MetricEarlyStoppingStrategy",
    "MetricInputError",
    "MetricStore",
    "MultiLabelClassificationOutput",
    "RegressionOutput",
    "Split",
    "StepModule",
    "StoppingCondition",
    "TrainOutput",
    "TrainStep",
    "TrainingResult",
    "ValidStep",
    "backward",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'burnlike.train' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"burnlike.train.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from burnlike.train.builder import LearnerBuilder
    from burnlike.train.checkpoint import (
        CheckpointingStrategy,
        ComposedCheckpointingStrategy,
        KeepLastNCheckpoints,
        MetricCheckpointingStrategy,
        MetricEarlyStoppingStrategy,
        StoppingCondition,
    )
    from burnlike.train.learner import Learner, TrainingResult
    from burnlike.train.metric.store import Aggregate, Direction, MetricStore, Split
    from burnlike.train.module import MetricInputError, StepModule
    from burnlike.train.output import ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput
    from burnlike.train.step import Gradients, TrainOutput, TrainStep, ValidStep, backward
    from burnlike.train.summary import LearnerSummary
