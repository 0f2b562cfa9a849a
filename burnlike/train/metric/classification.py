"""Metrics fed by classification outputs: accuracy, top-k accuracy, and Burn's `Loss`."""

from __future__ import annotations

from typing import Any

import torch

from burnlike.checks import positive_int
from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import ACCURACY, LOSS, TOP_K


class AccuracyMetric(Metric):
    """`Accuracy` in %: argmax == target (burn-train `metric/acc.rs`).

    With a pad token (Burn's `with_pad_token`), a batch's value is the share of its non-pad targets
    predicted right, and its weight is the batch size, pads included, as in Burn: the epoch value is
    the batch-size-weighted mean of the batch values (a batch of pads only is 0/0, NaN, in Burn too).
    `weighted_by_tokens()` weighs each batch by its non-pad count instead, so the epoch value is the
    exact share of all non-pad targets predicted right (a batch of pads only then weighs nothing).

    Args:
        pad_token: A target id left out of the value (Burn's `with_pad_token`); None: none.
        token_weighted: Weigh each batch by its non-pad targets instead of the batch size (see
            `weighted_by_tokens`).

    Attributes:
        pad_token: The pad token, or None.
        token_weighted: Whether batches are weighed by their non-pad targets.
    """

    name = "Accuracy"
    input = ACCURACY
    unit = "%"
    higher_is_better = True

    def __init__(self, pad_token: int | None = None, *, token_weighted: bool = False) -> None:
        super().__init__()
        self.pad_token = pad_token
        self.token_weighted = token_weighted

    def with_pad_token(self, index: int) -> AccuracyMetric:
        """Burn's `with_pad_token(index)`: leave that target id out; the metric itself.

        Args:
            index: The pad token's id.
        """
        self.pad_token = index
        return self

    def weighted_by_tokens(self, enabled: bool = True) -> AccuracyMetric:
        """Weigh each batch by its non-pad targets (burnlike's exact token accuracy), not Burn's batch size.

        Args:
            enabled: Whether to; False restores Burn's weighting.

        Returns:
            The metric itself, for chaining.
        """
        self.token_weighted = enabled
        return self

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        correct = item.output.argmax(dim=-1) == item.targets
        if self.pad_token is None:
            count: Number = item.targets.numel()
            return correct.float().mean() * 100.0, count
        return _padded(correct, item.targets != self.pad_token, self.token_weighted)


class TopKAccuracyMetric(Metric):
    """`Top-K Accuracy @ TopK(k)` in %: target among the k highest logits (burn-train
    `metric/top_k_acc.rs`). The pad token and `weighted_by_tokens()` as `AccuracyMetric`'s.

    Args:
        k: How many of the highest logits count as a hit; at least 1.
        pad_token: A target id left out of the value (Burn's `with_pad_token`); None: none.
        token_weighted: Weigh each batch by its non-pad targets instead of the batch size (see
            `weighted_by_tokens`).

    Raises:
        ValueError: `k` is below 1.

    Attributes:
        k: How many of the highest logits count.
        pad_token: The pad token, or None.
        token_weighted: Whether batches are weighed by their non-pad targets.
    """

    input = TOP_K
    unit = "%"
    higher_is_better = True

    def __init__(self, k: int, pad_token: int | None = None, *, token_weighted: bool = False) -> None:
        super().__init__()
        self.k = positive_int(k, "TopKAccuracyMetric: k")
        self.pad_token = pad_token
        self.token_weighted = token_weighted
        self.name = f"Top-K Accuracy @ TopK({k})"

    def with_pad_token(self, index: int) -> TopKAccuracyMetric:
        """Burn's `with_pad_token(index)`: leave that target id out; the metric itself.

        Args:
            index: The pad token's id.
        """
        self.pad_token = index
        return self

    def weighted_by_tokens(self, enabled: bool = True) -> TopKAccuracyMetric:
        """Weigh each batch by its non-pad targets, not Burn's batch size (see `AccuracyMetric`).

        Args:
            enabled: Whether to; False restores Burn's weighting.

        Returns:
            The metric itself, for chaining.
        """
        self.token_weighted = enabled
        return self

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        top = item.output.topk(min(self.k, item.output.shape[-1]), dim=-1).indices
        hit = (top == item.targets.unsqueeze(-1)).any(dim=-1)
        if self.pad_token is None:
            return hit.float().mean() * 100.0, item.targets.numel()
        return _padded(hit, item.targets != self.pad_token, self.token_weighted)


def _padded(hit: torch.Tensor, keep: torch.Tensor, token_weighted: bool) -> tuple[Number, Number]:
    """(hits among the non-pad targets in %, weight): Burn's weight is every target of the batch."""
    kept = keep.sum()
    if token_weighted:
        return (hit & keep).sum() * 100.0 / kept.clamp_min(1), kept
    return (hit & keep).sum() * 100.0 / kept, keep.numel()


class LossMetric(Metric):
    """`Loss`: mean of the loss tensor, weight = its first dim (1 for a scalar loss)."""

    name = "Loss"
    input = LOSS
    higher_is_better = False

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        loss: torch.Tensor = item.loss
        return loss.detach().float().mean(), (loss.shape[0] if loss.dim() > 0 else 1)
