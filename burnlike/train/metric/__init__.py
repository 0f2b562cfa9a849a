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
from burnlike.train.metric.entry import (
    MetricDefinition,
    MetricEntry,
    MetricId,
    NumericAttributes,
    NumericEntry,
    SerializedEntry,
)
from burnlike.train.metric.process import CpuMemory, CpuUse, IterationSpeedMetric, LearningRateMetric
from burnlike.train.metric.system import CpuTemperature, CudaMetric, CudaUtilization
from burnlike.train.metric.text import CharErrorRate, CorpusPerplexityMetric, PerplexityMetric, WordErrorRate
from burnlike.train.metric.vision import (
    DiceMetric,
    DiceMetricConfig,
    MsSsimMetric,
    MsSsimMetricConfig,
    PsnrMetric,
    PsnrMetricConfig,
    SsimMetric,
    SsimMetricConfig,
)

__all__ = [
    "AccuracyMetric",
    "CharErrorRate",
    "CorpusPerplexityMetric",
    "CpuTemperature",
    "CudaMetric",
    "CudaUtilization",
    "DiceMetric",
    "DiceMetricConfig",
    "MsSsimMetric",
    "MsSsimMetricConfig",
    "PerplexityMetric",
    "PsnrMetric",
    "PsnrMetricConfig",
    "SsimMetric",
    "SsimMetricConfig",
    "WordErrorRate",
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
    "MetricDefinition",
    "MetricEntry",
    "MetricId",
    "NumericAttributes",
    "NumericEntry",
    "SerializedEntry",
    "TopKAccuracyMetric",
]
