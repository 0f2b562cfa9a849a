"""The CNN of Burn's custom-image-dataset example (`examples/custom-image-dataset/src/model.rs`):
three VGG-style blocks (two 3x3 convs, ReLU, 2x2 max-pool, dropout), then two linear layers.

Burn's takes 32x32 RGB images (CIFAR-10); an adaptive average pool to 4x4 before the linear layers
(the identity at 32x32) lets other sizes through, and `in_channels` other depths. Written with
`burnlike.nn`, Burn's fields in Burn's order (the extra pool is stateless: not in the record), so
Burn's `Cnn` loads what this saves at 32x32 RGB.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from burnlike.config import config
from burnlike.data.vision import ImageBatch
from burnlike.module import Module
from burnlike.nn import (
    AdaptiveAvgPool2dConfig,
    Conv2dConfig,
    CrossEntropyLossConfig,
    DropoutConfig,
    LinearConfig,
    MaxPool2dConfig,
    PaddingConfig2d,
    Relu,
)
from burnlike.train.output import ClassificationOutput
from burnlike.train.step import TrainOutput, TrainStep, ValidStep, backward


class Cnn(Module, TrainStep[ImageBatch, ClassificationOutput], ValidStep[ImageBatch, ClassificationOutput]):
    """Burn's custom-image-dataset CNN. Build it with `CnnConfig(...).init(device)`.

    Args:
        num_classes: Output classes.
        in_channels: Image channels (3 for RGB).
        dropout: Dropout probability after each block and after `fc1`.
        device: Where the parameters are created.

    Attributes:
        activation: ReLU.
        dropout: Dropout after each block and after `fc1`.
        pool: 2×2 max-pool, stride 2, closing each block.
        conv1: First block, `in_channels` → 32 (3×3, `Same` padding, as every conv here).
        conv2: First block, 32 → 32.
        conv3: Second block, 32 → 64.
        conv4: Second block, 64 → 64.
        conv5: Third block, 64 → 128.
        conv6: Third block, 128 → 128.
        fit: Adaptive average pool to 4×4 (the identity at 32×32; burnlike's, not in the record).
        fc1: 128·4·4 → 128.
        fc2: 128 → `num_classes`.
    """

    __burn_fields__ = ("activation", "dropout", "pool", "conv1", "conv2", "conv3", "conv4", "conv5", "conv6", "fc1",
                       "fc2")

    def __init__(self, num_classes: int, in_channels: int = 3, dropout: float = 0.3, device: Any = None) -> None:
        super().__init__()
        self.activation = Relu.new()
        self.dropout = DropoutConfig(dropout).init()
        self.pool = MaxPool2dConfig([2, 2], strides=[2, 2]).init()
        widths = [(in_channels, 32), (32, 32), (32, 64), (64, 64), (64, 128), (128, 128)]
        self.conv1, self.conv2, self.conv3, self.conv4, self.conv5, self.conv6 = (
            Conv2dConfig([a, b], [3, 3], padding=PaddingConfig2d.Same).init(device) for a, b in widths)
        self.fit = AdaptiveAvgPool2dConfig([4, 4]).init()
        self.fc1 = LinearConfig(128 * 4 * 4, 128).init(device)
        self.fc2 = LinearConfig(128, num_classes).init(device)

    def forward(self, images: Tensor) -> Tensor:
        """Images → logits.

        Args:
            images: Float `[batch_size, in_channels, height, width]`, height and width at least 8.

        Returns:
            Logits `[batch_size, num_classes]`.
        """
        x = images
        for first, second in ((self.conv1, self.conv2), (self.conv3, self.conv4), (self.conv5, self.conv6)):
            x = self.activation(second(self.activation(first(x))))
            x = self.dropout(self.pool(x))
        x = torch.flatten(self.fit(x), 1)
        x = self.dropout(self.activation(self.fc1(x)))
        logits: Tensor = self.fc2(x)
        return logits

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        """The logits and their cross-entropy loss, as Burn's guide computes them.

        Args:
            images: Float `[batch_size, in_channels, height, width]`.
            targets: Class indices, int64 `[batch_size]`.
        """
        output = self.forward(images)
        loss = CrossEntropyLossConfig().init().forward(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch: ImageBatch) -> TrainOutput[ClassificationOutput]:
        """The training step: the loss and its gradients, the output for the metrics.

        Args:
            batch: A batch of images and their labels.
        """
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: ImageBatch) -> ClassificationOutput:
        """The validation step: the output for the metrics.

        Args:
            batch: A batch of images and their labels.
        """
        return self.forward_classification(batch.images, batch.targets)


@config
class CnnConfig:
    """The app's `model=cnn`, for `data=image_folder` (and CIFAR-10)."""

    num_classes: int = 10  # output classes (data=image_folder checks it against the class folders)
    in_channels: int = 3  # image channels: 3 for RGB, 1 for grayscale (data.mode=L)
    dropout: float = 0.3  # dropout probability after each block and the first linear layer

    def init(self, device: Any = None) -> Cnn:
        """The model, its parameters freshly initialised.

        Args:
            device: Where the parameters are created (`"cpu"` when None).
        """
        return Cnn(self.num_classes, self.in_channels, self.dropout, device or "cpu")
