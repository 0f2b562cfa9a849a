"""Burn's metrics (names, units, `value,count` semantics) over torchmetrics."""

from burnlike.train.metric.base import Metric, MetricContext
from burnlike.train.metric.classification import AccuracyMetric, LossMetric, TopKAccuracyMetric
from burnlike.train.metric.confusion import (
    AurocMetric,
    ClassReduction,
    FBetaScoreMetric,
    HammingScore,
    PrecisionMetric,
    RecallMetric,
)
from burnlike.train.metric.process import CpuMemory, CpuUse, IterationSpeedMetric, LearningRateMetric

__all__ = [
    "AccuracyMetric",
    "AurocMetric",
    "ClassReduction",
    "FBetaScoreMetric",
    "HammingScore",
    "PrecisionMetric",
    "RecallMetric",
    "CpuMemory",
    "CpuUse",
    "IterationSpeedMetric",
    "LearningRateMetric",
    "LossMetric",
    "Metric",
    "MetricContext",
    "TopKAccuracyMetric",
]
