"""Burn's `examples/mnist-inference-web` model (`src/model.rs`, see shared/data/burn/README.md), written
with `burnlike.nn` field for field; its fc layers are the sizes the stored weights have (1600→256→128→10)."""

from __future__ import annotations

import torch

from burnlike.module import Module
from burnlike.nn import (
    BatchNormConfig,
    Conv2dConfig,
    DropoutConfig,
    Gelu,
    LinearConfig,
    MaxPool2dConfig,
    Relu,
)


class ConvBlock(Module):
    __burn_fields__ = ("conv", "norm", "pool", "activation")
    __burn_optional__ = ("pool",)  # Burn: `pool: Option<MaxPool2d>`

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv = Conv2dConfig([c_in, c_out], [3, 3]).init()
        self.norm = BatchNormConfig(c_out).init()
        self.pool = MaxPool2dConfig([2, 2], strides=[2, 2]).init()
        self.activation = Relu.new()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.activation(self.norm(self.conv(x))))


class BurnMnist(Module):
    __burn_fields__ = ("conv1", "conv2", "dropout", "fc1", "fc2", "fc3", "activation")

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = ConvBlock(1, 64)
        self.conv2 = ConvBlock(64, 64)
        self.dropout = DropoutConfig(0.25).init()
        self.fc1 = LinearConfig(64 * 5 * 5, 256).init()
        self.fc2 = LinearConfig(256, 128).init()
        self.fc3 = LinearConfig(128, 10).init()
        self.activation = Gelu.new()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.conv2(self.conv1(images.unsqueeze(1)))
        x = self.dropout(self.activation(self.fc1(x.flatten(1))))
        x = self.dropout(self.activation(self.fc2(x)))
        return self.fc3(x)
