"""Burn's `burn::train`: steps, outputs, LearnerBuilder → Learner, on a lightning.Trainer."""

from burnlike.train.builder import LearnerBuilder
from burnlike.train.checkpoint import (
    Aggregate,
    ComposedCheckpointingStrategy,
    Direction,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
    MetricEarlyStoppingStrategy,
    Split,
    StoppingCondition,
)
from burnlike.train.learner import Learner, TrainingResult
from burnlike.train.module import MetricInputError, StepModule
from burnlike.train.output import ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput
from burnlike.train.step import Gradients, TrainOutput, TrainStep, ValidStep, backward
from burnlike.train.summary import LearnerSummary

__all__ = [
    "Aggregate",
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
