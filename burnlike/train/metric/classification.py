"""Metrics fed by classification outputs: accuracy, top-k accuracy, and Burn's `Loss`."""

from __future__ import annotations

from typing import Any

import torch

from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import ACCURACY, LOSS, TOP_K


class AccuracyMetric(Metric):
    """`Accuracy` in %: argmax == target, weighted by batch size; pad targets excluded."""

    name = "Accuracy"
    input = ACCURACY
    unit = "%"
    higher_is_better = True

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__()
        self.pad_token = pad_token

    def with_pad_token(self, index: int) -> AccuracyMetric:
        self.pad_token = index
        return self

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        correct = item.output.argmax(dim=-1) == item.targets
        if self.pad_token is None:
            count: Number = item.targets.numel()
            return correct.float().mean() * 100.0, count
        keep = item.targets != self.pad_token
        n = keep.sum()
        return (correct & keep).sum() * 100.0 / n.clamp_min(1), n


class TopKAccuracyMetric(Metric):
    """`Top-K Accuracy @ TopK(k)` in %: target among the k highest logits."""

    input = TOP_K
    unit = "%"
    higher_is_better = True

    def __init__(self, k: int, pad_token: int | None = None) -> None:
        super().__init__()
        if k < 1:
            raise ValueError(f"TopKAccuracyMetric: k must be >= 1, got {k}")
        self.k = k
        self.pad_token = pad_token
        self.name = f"Top-K Accuracy @ TopK({k})"

    def with_pad_token(self, index: int) -> TopKAccuracyMetric:
        self.pad_token = index
        return self

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        top = item.output.topk(min(self.k, item.output.shape[-1]), dim=-1).indices
        hit = (top == item.targets.unsqueeze(-1)).any(dim=-1)
        if self.pad_token is None:
            return hit.float().mean() * 100.0, item.targets.numel()
        keep = item.targets != self.pad_token
        n = keep.sum()
        return (hit & keep).sum() * 100.0 / n.clamp_min(1), n


class LossMetric(Metric):
    """`Loss`: mean of the loss tensor, weight = its first dim (1 for a scalar loss)."""

    name = "Loss"
    input = LOSS
    higher_is_better = False

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        loss: torch.Tensor = item.loss
        return loss.detach().float().mean(), (loss.shape[0] if loss.dim() > 0 else 1)
