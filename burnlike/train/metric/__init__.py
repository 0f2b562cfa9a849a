"""Burn's metrics (names, units, `value,count` semantics) over torchmetrics."""

from burnlike.train.metric.base import Metric, MetricContext, WeightedMean
from burnlike.train.metric.classification import AccuracyMetric, LossMetric, TopKAccuracyMetric
from burnlike.train.metric.process import CpuMemory, CpuUse, IterationSpeedMetric, LearningRateMetric

__all__ = [
    "AccuracyMetric",
    "CpuMemory",
    "CpuUse",
    "IterationSpeedMetric",
    "LearningRateMetric",
    "LossMetric",
    "Metric",
    "MetricContext",
    "TopKAccuracyMetric",
    "WeightedMean",
]
