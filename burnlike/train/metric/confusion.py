"""Confusion-stats metrics (precision, recall, F-beta, AUROC) and the Hamming score.

Burn's names and constructors (`PrecisionMetric.multiclass(top_k, ClassReduction.Macro)` …) over
`torchmetrics.functional`; values are in %, like Burn's accuracy.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, ClassVar, TypeVar

import torch
import torchmetrics.functional.classification as tmf

from burnlike.train.logger import rust_f64, rust_f64_debug
from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import CONFUSION, HAMMING


class ClassReduction(str, Enum):
    """Burn's `ClassReduction::{Micro, Macro}`; the UPPERCASE names are aliases."""

    Micro = "micro"
    Macro = "macro"
    MICRO = "micro"
    MACRO = "macro"


_C = TypeVar("_C", bound="_ConfusionMetric")


class _ConfusionMetric(Metric):
    input = CONFUSION
    unit = "%"
    higher_is_better = True
    _base_name = ""
    _functions: ClassVar[dict[str, Callable[..., torch.Tensor]]] = {}  # task -> torchmetrics function

    def __init__(self, task: str, threshold: float = 0.5, top_k: int = 1,
                 reduction: ClassReduction = ClassReduction.MACRO, beta: float | None = None) -> None:
        """Prefer Burn's constructors, `binary(...)`, `multiclass(...)` and `multilabel(...)`.

        Args:
            task: `"binary"`, `"multiclass"` or `"multilabel"`.
            threshold: The score above which a binary or multi-label decision is positive.
            top_k: Multi-class: a class counts as predicted when among the k highest scores.
            reduction: `ClassReduction.Macro` (each class's value, averaged) or `Micro` (over every decision).
            beta: F-beta's beta; None for precision and recall.

        Raises:
            ValueError: An unknown task.
        """
        super().__init__()
        if task not in ("binary", "multiclass", "multilabel"):
            raise ValueError(f"task must be binary, multiclass or multilabel, got {task!r}")
        self.task, self.threshold, self.top_k = task, threshold, top_k
        self.reduction, self.beta = ClassReduction(reduction), beta
        # Burn's names (burn-train metric/precision.rs, recall.rs, fbetascore.rs): `{:?}` of the
        # decision rule and the reduction (binary keeps the default Macro), `{}` of beta
        label = self._base_name if beta is None else f"{self._base_name} ({rust_f64(beta)})"
        red = self.reduction.value.capitalize()
        rule = f"TopK({top_k})" if task == "multiclass" else f"Threshold({rust_f64_debug(threshold)})"
        self.name = f"{label} @ {rule} [{red if task != 'binary' else 'Macro'}]"

    @classmethod
    def binary(cls: type[_C], threshold: float = 0.5) -> _C:
        """Burn's `binary(threshold)`: outputs `[B]` or `[B, 1]` of scores, targets 0/1.

        Args:
            threshold: The score above which a decision is positive.
        """
        return cls("binary", threshold=threshold)

    @classmethod
    def multiclass(cls: type[_C], top_k: int = 1, reduction: ClassReduction = ClassReduction.MACRO) -> _C:
        """Burn's `multiclass(top_k, reduction)`: outputs `[B, C]` of scores, targets class ids `[B]`.

        Args:
            top_k: A class counts as predicted when among the k highest scores.
            reduction: `ClassReduction.Macro` (each class's value, averaged) or `Micro` (over every decision).
        """
        return cls("multiclass", top_k=top_k, reduction=reduction)

    @classmethod
    def multilabel(cls: type[_C], threshold: float = 0.5, reduction: ClassReduction = ClassReduction.MACRO) -> _C:
        """Burn's `multilabel(threshold, reduction)`: outputs `[B, C]` of scores, targets multi-hot `[B, C]`.

        Args:
            threshold: The score above which a label is predicted.
            reduction: `ClassReduction.Macro` (each class's value, averaged) or `Micro` (over every decision).
        """
        return cls("multilabel", threshold=threshold, reduction=reduction)

    def compute(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The metric over `preds` and `target` as a fraction (torchmetrics' function for the task).

        Args:
            preds: The scores.
            target: The targets, int64.
        """
        return self._functions[self.task](preds, target, **self._kwargs(preds))

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        preds, target = item.output, item.targets
        if self.task == "binary":
            preds, target = preds.reshape(-1), target.reshape(-1)
        return self.compute(preds, target.long()) * 100.0, target.shape[0]

    def _kwargs(self, preds: torch.Tensor) -> dict[str, Any]:
        kw: dict[str, Any] = {"validate_args": False}
        if self.task == "binary":
            kw["threshold"] = self.threshold
        elif self.task == "multiclass":
            kw.update(num_classes=preds.shape[-1], top_k=self.top_k, average=self.reduction.value)
        else:
            kw.update(num_labels=preds.shape[-1], threshold=self.threshold, average=self.reduction.value)
        return kw


class PrecisionMetric(_ConfusionMetric):
    """Burn's `PrecisionMetric`, in %: the share of positive decisions that are right."""

    _base_name = "Precision"
    _functions = {"binary": tmf.binary_precision, "multiclass": tmf.multiclass_precision,
                 "multilabel": tmf.multilabel_precision}


class RecallMetric(_ConfusionMetric):
    """Burn's `RecallMetric`, in %: the share of positives decided positive."""

    _base_name = "Recall"
    _functions = {"binary": tmf.binary_recall, "multiclass": tmf.multiclass_recall,
                 "multilabel": tmf.multilabel_recall}


class FBetaScoreMetric(_ConfusionMetric):
    """Burn's `FBetaScoreMetric`, in %: the weighted harmonic mean of precision and recall, recall
    counting beta times as much."""

    _base_name = "FBetaScore"
    _functions = {"binary": tmf.binary_fbeta_score, "multiclass": tmf.multiclass_fbeta_score,
                 "multilabel": tmf.multilabel_fbeta_score}

    @classmethod
    def binary(cls, beta: float = 1.0, threshold: float = 0.5) -> FBetaScoreMetric:  # type: ignore[override]
        """Burn's `binary(beta, threshold)`: outputs `[B]` or `[B, 1]` of scores, targets 0/1.

        Args:
            beta: Recall's weight relative to precision (1: F1).
            threshold: The score above which a decision is positive.
        """
        return cls("binary", threshold=threshold, beta=beta)

    @classmethod
    def multiclass(cls, beta: float = 1.0, top_k: int = 1,  # type: ignore[override]
                   reduction: ClassReduction = ClassReduction.MACRO) -> FBetaScoreMetric:
        """Burn's `multiclass(beta, top_k, reduction)`: outputs `[B, C]`, targets class ids `[B]`.

        Args:
            beta: Recall's weight relative to precision (1: F1).
            top_k: A class counts as predicted when among the k highest scores.
            reduction: `ClassReduction.Macro` (each class's value, averaged) or `Micro` (over every decision).
        """
        return cls("multiclass", top_k=top_k, reduction=reduction, beta=beta)

    @classmethod
    def multilabel(cls, beta: float = 1.0, threshold: float = 0.5,  # type: ignore[override]
                   reduction: ClassReduction = ClassReduction.MACRO) -> FBetaScoreMetric:
        """Burn's `multilabel(beta, threshold, reduction)`: outputs `[B, C]`, targets multi-hot `[B, C]`.

        Args:
            beta: Recall's weight relative to precision (1: F1).
            threshold: The score above which a label is predicted.
            reduction: `ClassReduction.Macro` (each class's value, averaged) or `Micro` (over every decision).
        """
        return cls("multilabel", threshold=threshold, reduction=reduction, beta=beta)

    def _kwargs(self, preds: torch.Tensor) -> dict[str, Any]:
        return {**super()._kwargs(preds), "beta": self.beta or 1.0}


class AurocMetric(Metric):
    """`AUROC` (binary), in %: scores are the output's last column (or the output itself if 1-D),
    targets the targets' last column (or the targets themselves if 1-D), one per score."""

    name = "AUROC"
    input = CONFUSION
    unit = "%"
    higher_is_better = True

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        scores = item.output[..., -1] if item.output.dim() > 1 else item.output
        target = item.targets[..., -1] if item.targets.dim() > 1 else item.targets
        if target.shape != scores.shape:
            raise ValueError(f"{self.name}: expected a target per score {list(scores.shape)}, got targets of shape "
                             f"{list(item.targets.shape)} for outputs of shape {list(item.output.shape)}")
        return tmf.binary_auroc(scores, target.long(), validate_args=False) * 100.0, scores.shape[0]


class HammingScore(Metric):
    """`Hamming Score @ Threshold(t)`: share of labels predicted right, in %.

    Args:
        threshold: The score above which a label is predicted.
        sigmoid: Apply a sigmoid to the outputs first (they are logits).
    """

    input = HAMMING
    unit = "%"
    higher_is_better = True

    def __init__(self, threshold: float = 0.5, sigmoid: bool = False) -> None:
        super().__init__()
        self.threshold, self.sigmoid = threshold, sigmoid
        self.name = f"Hamming Score @ Threshold({rust_f64(threshold)})"  # Burn's `{}` (hamming.rs)

    def with_threshold(self, threshold: float) -> HammingScore:
        """Burn's `with_threshold`: a new metric with that threshold.

        Args:
            threshold: The score above which a label is predicted.
        """
        return HammingScore(threshold, self.sigmoid)

    def with_sigmoid(self, sigmoid: bool) -> HammingScore:
        """Burn's `with_sigmoid`: a new metric that applies a sigmoid to the outputs, or not.

        Args:
            sigmoid: Whether to.
        """
        return HammingScore(self.threshold, sigmoid)

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        scores = item.output.sigmoid() if self.sigmoid else item.output
        hits = (scores > self.threshold) == item.targets.bool()
        return hits.float().mean() * 100.0, item.targets.shape[0]
