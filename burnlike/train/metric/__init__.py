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
from burnlike.train.metric.dists import Dists, DistsConfig, DistsMetric
from burnlike.train.metric.entry import (
    MetricDefinition,
    MetricEntry,
    MetricId,
    NumericAttributes,
    NumericEntry,
    SerializedEntry,
)
from burnlike.train.metric.fid import Fid, FidConfig, FidMetric, InceptionV3FeatureExtractor
from burnlike.train.metric.lpips import (
    Lpips,
    LpipsConfig,
    LpipsMetric,
    LpipsNet,
    get_backbone_weights_url,
    get_lpips_weights_url,
)
from burnlike.train.metric.pretrained import WeightsError
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
    "Dists",
    "DistsConfig",
    "DistsMetric",
    "Fid",
    "FidConfig",
    "FidMetric",
    "InceptionV3FeatureExtractor",
    "Lpips",
    "LpipsConfig",
    "LpipsMetric",
    "LpipsNet",
    "MsSsimMetric",
    "MsSsimMetricConfig",
    "PerplexityMetric",
    "PsnrMetric",
    "PsnrMetricConfig",
    "SsimMetric",
    "SsimMetricConfig",
    "WeightsError",
    "WordErrorRate",
    "get_backbone_weights_url",
    "get_lpips_weights_url",
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
