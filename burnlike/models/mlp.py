"""A small MLP on MNIST: the second `model=` option, cheap enough for sweeps."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from burnlike.config import config
from burnlike.data import MnistBatch
from burnlike.module import Module
from burnlike.nn import CrossEntropyLossConfig, DropoutConfig, LinearConfig, Relu
from burnlike.train.output import ClassificationOutput
from burnlike.train.step import TrainOutput, TrainStep, ValidStep, backward


class Mlp(Module, TrainStep[MnistBatch, ClassificationOutput], ValidStep[MnistBatch, ClassificationOutput]):
    """Flattened 28×28 images through `Linear`, ReLU and dropout per hidden layer, then a linear
    output layer. Build it with `MlpConfig(...).init(device)`.

    Args:
        hidden_sizes: The hidden layers' widths, in order.
        num_classes: Output classes.
        dropout: Dropout probability after each hidden layer.
        device: Where the parameters are created.

    Attributes:
        layers: The hidden `Linear` layers.
        dropout: Dropout after each hidden layer.
        activation: ReLU.
        output: The last hidden width → `num_classes`.
    """

    def __init__(self, hidden_sizes: list[int], num_classes: int, dropout: float, device: Any = None) -> None:
        super().__init__()
        sizes = [28 * 28, *hidden_sizes]
        self.layers = nn.ModuleList([LinearConfig(a, b).init(device) for a, b in zip(sizes, sizes[1:])])
        self.dropout = DropoutConfig(dropout).init()
        self.activation = Relu.new()
        self.output = LinearConfig(sizes[-1], num_classes).init(device)

    def forward(self, images: Tensor) -> Tensor:
        """Images → logits.

        Args:
            images: Float `[batch_size, 28, 28]` (any shape that flattens to 784 features).

        Returns:
            Logits `[batch_size, num_classes]`.
        """
        x = torch.flatten(images, 1)
        for layer in self.layers:
            x = self.dropout(self.activation(layer(x)))
        logits: Tensor = self.output(x)
        return logits

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        """The logits and their cross-entropy loss, as Burn's guide computes them.

        Args:
            images: Float `[batch_size, 28, 28]`.
            targets: Class indices, int64 `[batch_size]`.
        """
        output = self.forward(images)
        return ClassificationOutput(CrossEntropyLossConfig().init().forward(output, targets), output, targets)

    def train_step(self, batch: MnistBatch) -> TrainOutput[ClassificationOutput]:
        """The training step: the loss and its gradients, the output for the metrics.

        Args:
            batch: A batch of MNIST images and their labels.
        """
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: MnistBatch) -> ClassificationOutput:
        """The validation step: the output for the metrics.

        Args:
            batch: A batch of MNIST images and their labels.
        """
        return self.forward_classification(batch.images, batch.targets)


@config
class MlpConfig:
    """The app's `model=mlp`: a small MLP on MNIST, cheap enough for sweeps."""

    num_classes: int = 10  # output classes
    hidden_sizes: list[int] = [256, 128]  # the hidden layers' widths, in order (each: Linear, ReLU, dropout)
    dropout: float = 0.1  # dropout probability after each hidden layer

    def init(self, device: Any = None) -> Mlp:
        """The model, its parameters freshly initialised.

        Args:
            device: Where the parameters are created (`"cpu"` when None).
        """
        return Mlp(list(self.hidden_sizes), self.num_classes, self.dropout, device or "cpu")
