"""Output items and Burn's Adaptor pattern: what each output can feed.

An output lists the metric inputs it can `adapt` to (`provides`); a metric names the input it needs
(`Metric.input`). `LearnerBuilder.build()` compares the two, so a mismatch fails before training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import Tensor

# Metric input kinds (Burn's AccuracyInput, LossInput, TopKAccuracyInput, ConfusionStatsInput, ...).
LOSS = "loss"
ACCURACY = "accuracy"
TOP_K = "top_k"
CONFUSION = "confusion"
HAMMING = "hamming"
NONE = "none"  # metrics that need nothing from the output (learning rate, speed)


class Adaptor:
    """Base for outputs: `provides` is the set of metric inputs this output adapts to."""

    provides: ClassVar[frozenset[str]] = frozenset({NONE})


@dataclass
class ClassificationOutput(Adaptor):
    """`loss` (scalar), `output` logits [B, C], `targets` int [B]."""

    loss: Tensor
    output: Tensor
    targets: Tensor
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, ACCURACY, TOP_K, CONFUSION, NONE})


@dataclass
class MultiLabelClassificationOutput(Adaptor):
    """`loss`, `output` logits [B, C], `targets` int/bool [B, C] (multi-hot)."""

    loss: Tensor
    output: Tensor
    targets: Tensor
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, HAMMING, CONFUSION, NONE})


@dataclass
class RegressionOutput(Adaptor):
    """`loss`, `output` [B, D], `targets` [B, D]."""

    loss: Tensor
    output: Tensor
    targets: Tensor
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, NONE})
