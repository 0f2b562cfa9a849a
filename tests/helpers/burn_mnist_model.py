"""PyTorch twin of Burn's `examples/mnist-inference-web` model (see shared/data/burn/README.md)."""

from __future__ import annotations

import torch
from torch import nn

from burnlike.module import Module


class ConvBlock(Module):
    __burn_optional__ = ("pool",)  # Burn: `pool: Option<MaxPool2d>`

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3)
        self.norm = nn.BatchNorm2d(c_out)
        self.pool = nn.MaxPool2d(2, 2)
        self.activation = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.activation(self.norm(self.conv(x))))


class BurnMnist(Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = ConvBlock(1, 64)
        self.conv2 = ConvBlock(64, 64)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(1600, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)
        self.activation = nn.GELU()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.conv2(self.conv1(images.unsqueeze(1)))
        x = self.dropout(self.activation(self.fc1(x.flatten(1))))
        x = self.dropout(self.activation(self.fc2(x)))
        return self.fc3(x)
