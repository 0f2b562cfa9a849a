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
PERPLEXITY = "perplexity"  # logits [..., V] and int targets [...]
CER = "cer"  # predicted and target token ids [B, S]
WER = "wer"
DICE = "dice"  # int masks `output`/`targets` [B, C, ...] (Burn's DiceInput)
IMAGE = "image"  # float images `output`/`targets` [B, C, H, W] (Burn's PsnrInput/SsimInput/MsSsimInput)
NONE = "none"  # metrics that need nothing from the output (learning rate, speed)


class Adaptor:
    """Base for outputs: `provides` is the set of metric inputs this output adapts to."""

    provides: ClassVar[frozenset[str]] = frozenset({NONE})


@dataclass
class ClassificationOutput(Adaptor):
    """`loss` (scalar), `output` logits [B, C], `targets` int [B]. Feeds what Burn's adapts it to
    (burn-train `learner/classification.rs`): Loss, Accuracy, Top-K, AUROC, the confusion-stats
    metrics and Perplexity."""

    loss: Tensor
    output: Tensor
    targets: Tensor
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, ACCURACY, TOP_K, CONFUSION, PERPLEXITY, NONE})


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


@dataclass
class SequenceOutput(Adaptor):
    """Burn 0.21's sequence output: `loss`, `logits` [B, S, V], `predictions` [B, S] token ids or None
    (then the argmax of the logits), `targets` [B, S]. Feeds Loss, Accuracy and Top-K (per token),
    Perplexity, CER and WER."""

    loss: Tensor
    logits: Tensor
    predictions: Tensor | None
    targets: Tensor
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, ACCURACY, TOP_K, PERPLEXITY, CER, WER, NONE})

    @property
    def output(self) -> Tensor:
        """The logits, as the token-level accuracy metrics read them."""
        return self.logits

    def predicted_tokens(self) -> Tensor:
        return self.predictions if self.predictions is not None else self.logits.argmax(dim=-1)
