"""The model of Burn's book guide (`examples/guide/src/model.rs`), written with `burnlike.nn` field for
field: the same names, sizes, defaults and record as Burn's."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from burnlike.config import config
from burnlike.data import MnistBatch
from burnlike.module import Module
from burnlike.nn import (
    AdaptiveAvgPool2dConfig,
    Conv2dConfig,
    CrossEntropyLossConfig,
    DropoutConfig,
    LinearConfig,
    Relu,
)
from burnlike.train.output import ClassificationOutput
from burnlike.train.step import TrainOutput, TrainStep, ValidStep, backward


class Model(
    Module,
    TrainStep[MnistBatch, ClassificationOutput],
    ValidStep[MnistBatch, ClassificationOutput],
):
    """The guide's model: two 3×3 convolutions (1 → 8 → 16 channels), an adaptive average pool to
    8×8, then two linear layers, with dropout after each convolution and after `linear1`. Build it
    with `ModelConfig(num_classes, hidden_size).init(device)`.

    Args:
        num_classes: Output classes.
        hidden_size: Width of `linear1`.
        dropout: Dropout probability.
        device: Where the parameters are created.

    Attributes:
        conv1: 3×3 convolution, 1 → 8 channels.
        conv2: 3×3 convolution, 8 → 16 channels.
        pool: Adaptive average pool to 8×8.
        dropout: Dropout after each convolution and after `linear1`.
        linear1: 16·8·8 → `hidden_size`.
        linear2: `hidden_size` → `num_classes`.
        activation: ReLU.
    """

    __burn_fields__ = ("conv1", "conv2", "pool", "dropout", "linear1", "linear2", "activation")

    def __init__(self, num_classes: int, hidden_size: int, dropout: float, device: Any = None) -> None:
        super().__init__()
        self.conv1 = Conv2dConfig([1, 8], [3, 3]).init(device)
        self.conv2 = Conv2dConfig([8, 16], [3, 3]).init(device)
        self.pool = AdaptiveAvgPool2dConfig([8, 8]).init()
        self.activation = Relu.new()
        self.linear1 = LinearConfig(16 * 8 * 8, hidden_size).init(device)
        self.linear2 = LinearConfig(hidden_size, num_classes).init(device)
        self.dropout = DropoutConfig(dropout).init()

    def forward(self, images: Tensor) -> Tensor:
        """Images → logits.

        Args:
            images: Grayscale images, float `[batch_size, height, width]`.

        Returns:
            Logits `[batch_size, num_classes]`.
        """
        batch_size, height, width = images.shape
        x = images.reshape(batch_size, 1, height, width)  # create a channel
        x = self.conv1(x)  # [batch_size, 8, _, _]
        x = self.dropout(x)
        x = self.conv2(x)  # [batch_size, 16, _, _]
        x = self.dropout(x)
        x = self.activation(x)
        x = self.pool(x)  # [batch_size, 16, 8, 8]
        x = x.reshape(batch_size, 16 * 8 * 8)
        x = self.linear1(x)
        x = self.dropout(x)
        x = self.activation(x)
        logits: Tensor = self.linear2(x)  # [batch_size, num_classes]
        return logits

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        """The logits and their cross-entropy loss, as Burn's guide computes them.

        Args:
            images: Grayscale images, float `[batch_size, height, width]`.
            targets: Class indices, int64 `[batch_size]`.
        """
        output = self.forward(images)
        loss = CrossEntropyLossConfig().init(output.device).forward(output, targets)
        return ClassificationOutput(loss, output, targets)

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
class ModelConfig:
    """The guide's `ModelConfig`: `ModelConfig(10, 512).init(device)` is the book's model."""

    num_classes: int  # output classes (10 digits for MNIST)
    hidden_size: int  # width of linear1 (1024 -> hidden_size -> num_classes); the guide's is 512
    dropout: float = 0.5  # dropout probability after each conv and after linear1

    def init(self, device: Any = None) -> Model:
        """Returns the initialized model.

        Args:
            device: Where the parameters are created (`"cpu"` when None).
        """
        return Model(self.num_classes, self.hidden_size, self.dropout, device or "cpu")
