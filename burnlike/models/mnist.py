"""The model of Burn's book guide (`examples/guide/src/model.rs`), in PyTorch."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from burnlike.config import config
from burnlike.data import MnistBatch
from burnlike.module import Module
from burnlike.nn import CrossEntropyLossConfig
from burnlike.train.output import ClassificationOutput
from burnlike.train.step import TrainOutput, TrainStep, ValidStep, backward


class Model(
    Module,
    TrainStep[MnistBatch, ClassificationOutput],
    ValidStep[MnistBatch, ClassificationOutput],
):
    def __init__(self, num_classes: int, hidden_size: int, dropout: float) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.pool = nn.AdaptiveAvgPool2d((8, 8))
        self.dropout = nn.Dropout(dropout)
        self.linear1 = nn.Linear(16 * 8 * 8, hidden_size)
        self.linear2 = nn.Linear(hidden_size, num_classes)
        self.activation = nn.ReLU()

    def forward(self, images: Tensor) -> Tensor:
        x = images.unsqueeze(1)  # [B, 28, 28] -> [B, 1, 28, 28]
        x = self.dropout(self.conv1(x))
        x = self.activation(self.dropout(self.conv2(x)))
        x = torch.flatten(self.pool(x), 1)
        x = self.activation(self.dropout(self.linear1(x)))
        logits: Tensor = self.linear2(x)
        return logits

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        output = self.forward(images)
        loss = CrossEntropyLossConfig().init().forward(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch: MnistBatch) -> TrainOutput[ClassificationOutput]:
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: MnistBatch) -> ClassificationOutput:
        return self.forward_classification(batch.images, batch.targets)


@config
class ModelConfig:
    num_classes: int  # output classes (10 digits for MNIST)
    hidden_size: int  # width of linear1 (1024 -> hidden_size -> num_classes); the guide's is 512
    dropout: float = 0.5  # dropout probability after each conv and after linear1

    def init(self, device: Any = None) -> Model:
        return Model(self.num_classes, self.hidden_size, self.dropout).to(device or "cpu")
