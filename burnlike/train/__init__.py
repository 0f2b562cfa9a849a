"""Burn's `burn::train`: steps, outputs, LearnerBuilder → Learner (and 0.20's SupervisedTraining),
the evaluator, on a lightning.Trainer.

Names are resolved lazily, so `burnlike.train.step`/`output` (used by models) import without
Lightning; `from burnlike.train import LearnerBuilder` loads it on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "LearnerBuilder": "builder",
    "Learner": "components",
    "EvaluationResult": "evaluator",
    "Evaluator": "evaluator",
    "EvaluatorBuilder": "evaluator",
    "Interrupter": "interrupter",
    "ApplicationLoggerInstaller": "logger",
    "FileApplicationLoggerInstaller": "logger",
    "SequenceOutput": "output",
    "InferenceStep": "step",
    "CollectiveConfig": "strategy",
    "DistributedConfig": "strategy",
    "ExecutionStrategy": "strategy",
    "LearningStrategy": "strategy",
    "MultiDeviceOptim": "strategy",
    "ReduceOperation": "strategy",
    "TrainingStrategy": "strategy",
    "ddp": "strategy",
    "LearningResult": "supervised",
    "SupervisedTraining": "supervised",
    "CustomLearningStrategy": "learning_strategy",
    "LearningCheckpointer": "learning_strategy",
    "SupervisedLearningStrategy": "learning_strategy",
    "TrainingComponents": "learning_strategy",
    "EventProcessorTraining": "event",
    "LearnerEvent": "event",
    "SupervisedTrainingEventProcessor": "event",
    "TrainingItem": "event",
    "CheckpointingAction": "checkpoint",
    "CheckpointingStrategy": "checkpoint",
    "ComposedCheckpointingStrategy": "checkpoint",
    "KeepLastNCheckpoints": "checkpoint",
    "MetricCheckpointingStrategy": "checkpoint",
    "MetricEarlyStoppingStrategy": "checkpoint",
    "StoppingCondition": "checkpoint",
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
    "CliMetricsRenderer": "renderer",
    "EvaluationName": "renderer",
    "EvaluationProgress": "renderer",
    "MetricState": "renderer",
    "MetricsRenderer": "renderer",
    "MetricsRendererEvaluation": "renderer",
    "MetricsRendererTraining": "renderer",
    "ProgressType": "renderer",
    "TrainingProgress": "renderer",
}

__all__ = [
    "Aggregate",
    "ApplicationLoggerInstaller",
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ClassificationOutput",
    "CliMetricsRenderer",
    "CollectiveConfig",
    "ComposedCheckpointingStrategy",
    "CustomLearningStrategy",
    "Direction",
    "DistributedConfig",
    "EvaluationName",
    "EvaluationProgress",
    "EvaluationResult",
    "Evaluator",
    "EvaluatorBuilder",
    "EventProcessorTraining",
    "ExecutionStrategy",
    "FileApplicationLoggerInstaller",
    "Gradients",
    "InferenceStep",
    "Interrupter",
    "KeepLastNCheckpoints",
    "Learner",
    "LearnerBuilder",
    "LearnerEvent",
    "LearnerSummary",
    "LearningCheckpointer",
    "LearningResult",
    "LearningStrategy",
    "MetricCheckpointingStrategy",
    "MetricEarlyStoppingStrategy",
    "MetricInputError",
    "MetricState",
    "MetricStore",
    "MetricsRenderer",
    "MetricsRendererEvaluation",
    "MetricsRendererTraining",
    "MultiDeviceOptim",
    "MultiLabelClassificationOutput",
    "ProgressType",
    "ReduceOperation",
    "RegressionOutput",
    "SequenceOutput",
    "Split",
    "StepModule",
    "StoppingCondition",
    "SupervisedLearningStrategy",
    "SupervisedTraining",
    "SupervisedTrainingEventProcessor",
    "TrainOutput",
    "TrainStep",
    "TrainingComponents",
    "TrainingItem",
    "TrainingProgress",
    "TrainingResult",
    "TrainingStrategy",
    "ValidStep",
    "backward",
    "ddp",
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
        CheckpointingAction,
        CheckpointingStrategy,
        ComposedCheckpointingStrategy,
        KeepLastNCheckpoints,
        MetricCheckpointingStrategy,
        MetricEarlyStoppingStrategy,
        StoppingCondition,
    )
    from burnlike.train.components import Learner
    from burnlike.train.evaluator import EvaluationResult, Evaluator, EvaluatorBuilder
    from burnlike.train.event import (
        EventProcessorTraining,
        LearnerEvent,
        SupervisedTrainingEventProcessor,
        TrainingItem,
    )
    from burnlike.train.interrupter import Interrupter
    from burnlike.train.learner import TrainingResult
    from burnlike.train.learning_strategy import (
        CustomLearningStrategy,
        LearningCheckpointer,
        SupervisedLearningStrategy,
        TrainingComponents,
    )
    from burnlike.train.logger import ApplicationLoggerInstaller, FileApplicationLoggerInstaller
    from burnlike.train.metric.store import Aggregate, Direction, MetricStore, Split
    from burnlike.train.module import MetricInputError, StepModule
    from burnlike.train.output import (
        ClassificationOutput,
        MultiLabelClassificationOutput,
        RegressionOutput,
        SequenceOutput,
    )
    from burnlike.train.renderer import (
        CliMetricsRenderer,
        EvaluationName,
        EvaluationProgress,
        MetricsRenderer,
        MetricsRendererEvaluation,
        MetricsRendererTraining,
        MetricState,
        ProgressType,
        TrainingProgress,
    )
    from burnlike.train.step import Gradients, InferenceStep, TrainOutput, TrainStep, ValidStep, backward
    from burnlike.train.strategy import (
        CollectiveConfig,
        DistributedConfig,
        ExecutionStrategy,
        LearningStrategy,
        MultiDeviceOptim,
        ReduceOperation,
        TrainingStrategy,
        ddp,
    )
    from burnlike.train.summary import LearnerSummary
    from burnlike.train.supervised import LearningResult, SupervisedTraining
