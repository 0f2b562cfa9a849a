"""Loss configs shaped like Burn's (`CrossEntropyLossConfig::new().init(&device).forward(out, t)`).

`init(device=None)` takes the device only for Burn's spelling; the losses hold no tensors.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from burnlike.config import config


class Reduction(str, Enum):
    MEAN = "mean"
    SUM = "sum"
    AUTO = "mean"


@config
class CrossEntropyLossConfig:
    pad_tokens: list[int] | None = None
    weights: list[float] | None = None
    smoothing: float | None = None
    logits: bool = True

    def init(self, device: Any = None) -> CrossEntropyLoss:
        if self.pad_tokens is not None and len(self.pad_tokens) > 1:
            raise ValueError("CrossEntropyLossConfig.pad_tokens: only one pad token is supported")
        if self.smoothing is not None and not 0.0 <= self.smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLossConfig.smoothing must be in [0, 1], got {self.smoothing}")
        weight = torch.tensor(self.weights, device=device) if self.weights is not None else None
        return CrossEntropyLoss(
            pad_token=self.pad_tokens[0] if self.pad_tokens else None,
            weight=weight,
            smoothing=self.smoothing or 0.0,
            logits=self.logits,
        )


class CrossEntropyLoss(nn.Module):
    """Mean cross-entropy over non-pad targets; `logits=False` takes probabilities."""

    def __init__(
        self, pad_token: int | None = None, weight: Tensor | None = None, smoothing: float = 0.0, logits: bool = True
    ) -> None:
        super().__init__()
        self.pad_token = pad_token
        self.weight = weight
        self.smoothing = smoothing
        self.logits = logits

    def forward(self, output: Tensor, targets: Tensor) -> Tensor:
        inputs = output if self.logits else torch.log(output.clamp_min(1e-12))
        return F.cross_entropy(
            inputs,
            targets,
            weight=self.weight,
            ignore_index=-100 if self.pad_token is None else self.pad_token,
            label_smoothing=self.smoothing,
        )


@config
class MseLossConfig:
    def init(self, device: Any = None) -> MseLoss:
        return MseLoss()


class MseLoss(nn.Module):
    def forward(self, output: Tensor, targets: Tensor, reduction: Reduction | str = Reduction.MEAN) -> Tensor:
        return F.mse_loss(output, targets, reduction=Reduction(reduction).value)


@config
class HuberLossConfig:
    delta: float

    def init(self, device: Any = None) -> HuberLoss:
        return HuberLoss(self.delta)


class HuberLoss(nn.Module):
    def __init__(self, delta: float) -> None:
        super().__init__()
        self.delta = delta

    def forward(self, output: Tensor, targets: Tensor, reduction: Reduction | str = Reduction.MEAN) -> Tensor:
        return F.huber_loss(output, targets, reduction=Reduction(reduction).value, delta=self.delta)


@config
class BinaryCrossEntropyLossConfig:
    weights: list[float] | None = None
    smoothing: float | None = None
    logits: bool = False

    def init(self, device: Any = None) -> BinaryCrossEntropyLoss:
        weight = torch.tensor(self.weights, device=device) if self.weights is not None else None
        return BinaryCrossEntropyLoss(weight, self.smoothing or 0.0, self.logits)


class BinaryCrossEntropyLoss(nn.Module):
    def __init__(self, weight: Tensor | None = None, smoothing: float = 0.0, logits: bool = False) -> None:
        super().__init__()
        self.weight = weight
        self.smoothing = smoothing
        self.logits = logits

    def forward(self, output: Tensor, targets: Tensor) -> Tensor:
        t = targets.to(output.dtype)
        if self.smoothing:
            t = t * (1 - self.smoothing) + 0.5 * self.smoothing
        if self.logits:
            return F.binary_cross_entropy_with_logits(output, t, weight=self.weight)
        return F.binary_cross_entropy(output, t, weight=self.weight)
