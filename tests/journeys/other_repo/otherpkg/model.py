"""A model of another project's own, implementing burnlike's step traits."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from burnlike.config import config
from burnlike.data import MnistBatch
from burnlike.module import Module
from burnlike.nn import CrossEntropyLossConfig
from burnlike.train import ClassificationOutput, TrainOutput, TrainStep, ValidStep, backward


class Tiny(Module, TrainStep[MnistBatch, ClassificationOutput], ValidStep[MnistBatch, ClassificationOutput]):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(28 * 28, width)
        self.out = nn.Linear(width, 10)
        self.loss = CrossEntropyLossConfig().init()

    def forward(self, images: Tensor) -> Tensor:
        return self.out(self.hidden(images.flatten(1)).relu())

    def classify(self, batch: MnistBatch) -> ClassificationOutput:
        output = self.forward(batch.images)
        return ClassificationOutput(self.loss.forward(output, batch.targets), output, batch.targets)

    def train_step(self, batch: MnistBatch) -> TrainOutput[ClassificationOutput]:
        item = self.classify(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: MnistBatch) -> ClassificationOutput:
        return self.classify(batch)


@config
class TinyConfig:
    width: int = 32

    def init(self, device: Any = "cpu") -> Tiny:
        return Tiny(self.width).to(device)
