"""Burn's loss configs as thin factories over `torch.nn.functional`."""

from burnlike.nn.loss import (
    BinaryCrossEntropyLoss,
    BinaryCrossEntropyLossConfig,
    CrossEntropyLoss,
    CrossEntropyLossConfig,
    HuberLoss,
    HuberLossConfig,
    MseLoss,
    MseLossConfig,
    Reduction,
)

__all__ = [
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "HuberLoss",
    "HuberLossConfig",
    "MseLoss",
    "MseLossConfig",
    "Reduction",
]
