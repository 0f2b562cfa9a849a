"""An MLP over table rows: Burn's simple-regression model (`Linear(features, 64)`, ReLU,
`Linear(64, 1)`, MSE) when the targets are floats, a classifier (cross-entropy) when they are ids."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from burnlike.config import config
from burnlike.data.tabular import TabularBatch
from burnlike.module import Module
from burnlike.nn import CrossEntropyLossConfig, DropoutConfig, LinearConfig, MseLoss, Relu
from burnlike.train.output import ClassificationOutput, RegressionOutput
from burnlike.train.step import TrainOutput, TrainStep, ValidStep, backward

TabularOutput = ClassificationOutput | RegressionOutput
"""A `TabularMlp` step's output: a classification for integer targets, else a regression."""


class TabularMlp(Module, TrainStep[TabularBatch, TabularOutput], ValidStep[TabularBatch, TabularOutput]):
    """`Linear`, ReLU and dropout per hidden layer, then a linear output layer; its loss is MSE for
    float targets, cross-entropy for class ids. Build it with `TabularMlpConfig(...).init(device)`.

    Args:
        num_features: Input columns.
        num_outputs: Classes, or target columns for a regression.
        hidden_sizes: The hidden layers' widths, in order.
        dropout: Dropout probability after each hidden layer.
        device: Where the parameters are created.

    Attributes:
        hidden: The hidden layers (`Linear`, ReLU, dropout each).
        output: The last hidden width → `num_outputs`.
    """

    def __init__(self, num_features: int, num_outputs: int, hidden_sizes: list[int], dropout: float,
                 device: Any = None) -> None:
        super().__init__()
        sizes = [num_features, *hidden_sizes]
        layers: list[nn.Module] = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [LinearConfig(a, b).init(device), Relu.new(), DropoutConfig(dropout).init()]
        self.hidden = nn.Sequential(*layers)
        self.output = LinearConfig(sizes[-1], num_outputs).init(device)

    def forward(self, inputs: Tensor) -> Tensor:
        """Rows → outputs.

        Args:
            inputs: Float `[batch_size, num_features]`.

        Returns:
            `[batch_size, num_outputs]`: logits, or the predicted values.
        """
        logits: Tensor = self.output(self.hidden(inputs))
        return logits

    def forward_step(self, batch: TabularBatch) -> TabularOutput:
        """The outputs and their loss: MSE for float targets, cross-entropy for class ids.

        Args:
            batch: Rows and their targets.
        """
        output = self.forward(batch.inputs)
        if batch.targets.is_floating_point():
            return RegressionOutput(MseLoss().forward(output, batch.targets), output, batch.targets)
        return ClassificationOutput(CrossEntropyLossConfig().init().forward(output, batch.targets), output,
                                    batch.targets)

    def train_step(self, batch: TabularBatch) -> TrainOutput[TabularOutput]:
        """The training step: the loss and its gradients, the output for the metrics.

        Args:
            batch: A batch of rows and their targets.
        """
        item = self.forward_step(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: TabularBatch) -> TabularOutput:
        """The validation step: the output for the metrics.

        Args:
            batch: A batch of rows and their targets.
        """
        return self.forward_step(batch)


@config
class TabularMlpConfig:
    """The app's `model=tabular`, for `data=csv`: Burn's simple-regression model by default."""

    num_features: int = 10  # input columns (data=csv checks it against the table)
    num_outputs: int = 1  # classes, or target columns for a regression
    hidden_sizes: list[int] = [64]  # the hidden layers' widths, in order
    dropout: float = 0.0  # dropout probability after each hidden layer

    def init(self, device: Any = None) -> TabularMlp:
        """The model, its parameters freshly initialised.

        Args:
            device: Where the parameters are created (`"cpu"` when None).
        """
        return TabularMlp(self.num_features, self.num_outputs, list(self.hidden_sizes), self.dropout, device or "cpu")
