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
    """A classification step's output. Feeds what Burn's adapts it to (burn-train
    `learner/classification.rs`): Loss, Accuracy, Top-K, AUROC, the confusion-stats metrics and
    Perplexity."""

    loss: Tensor  # the batch's scalar loss
    output: Tensor  # logits [B, C]
    targets: Tensor  # class indices, int [B]
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, ACCURACY, TOP_K, CONFUSION, PERPLEXITY, NONE})
    """The metric inputs it adapts to."""


@dataclass
class MultiLabelClassificationOutput(Adaptor):
    """A multi-label classification step's output: feeds Loss, the Hamming score and the
    confusion-stats metrics."""

    loss: Tensor  # the batch's scalar loss
    output: Tensor  # logits [B, C], one independent score per label
    targets: Tensor  # multi-hot labels, int or bool [B, C]
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, HAMMING, CONFUSION, NONE})
    """The metric inputs it adapts to."""


@dataclass
class RegressionOutput(Adaptor):
    """A regression step's output: feeds Loss (and the metrics that need no output)."""

    loss: Tensor  # the batch's scalar loss
    output: Tensor  # predictions [B, D]
    targets: Tensor  # true values [B, D]
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, NONE})
    """The metric inputs it adapts to."""


@dataclass
class SequenceOutput(Adaptor):
    """Burn 0.21's sequence output. Feeds Loss, Accuracy and Top-K (per token), Perplexity, CER and
    WER."""

    loss: Tensor  # the batch's scalar loss
    logits: Tensor  # [B, S, V] over a vocabulary of V tokens
    predictions: Tensor | None  # token ids [B, S], or None for the argmax of the logits
    targets: Tensor  # token ids [B, S]
    provides: ClassVar[frozenset[str]] = frozenset({LOSS, ACCURACY, TOP_K, PERPLEXITY, CER, WER, NONE})
    """The metric inputs it adapts to."""

    @property
    def output(self) -> Tensor:
        """The logits, as the token-level accuracy metrics read them."""
        return self.logits

    def predicted_tokens(self) -> Tensor:
        """The predicted token ids [B, S] CER and WER compare: `predictions`, or the logits' argmax."""
        return self.predictions if self.predictions is not None else self.logits.argmax(dim=-1)
