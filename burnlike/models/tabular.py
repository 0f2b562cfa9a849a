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


class TabularMlp(Module, TrainStep[TabularBatch, TabularOutput], ValidStep[TabularBatch, TabularOutput]):
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
        logits: Tensor = self.output(self.hidden(inputs))
        return logits

    def forward_step(self, batch: TabularBatch) -> TabularOutput:
        output = self.forward(batch.inputs)
        if batch.targets.is_floating_point():
            return RegressionOutput(MseLoss().forward(output, batch.targets), output, batch.targets)
        return ClassificationOutput(CrossEntropyLossConfig().init().forward(output, batch.targets), output,
                                    batch.targets)

    def train_step(self, batch: TabularBatch) -> TrainOutput[TabularOutput]:
        item = self.forward_step(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: TabularBatch) -> TabularOutput:
        return self.forward_step(batch)


@config
class TabularMlpConfig:
    """`num_outputs`: the number of classes, or of target columns for a regression."""

    num_features: int = 10  # input columns (data=csv checks it against the table)
    num_outputs: int = 1  # classes, or target columns for a regression
    hidden_sizes: list[int] = [64]  # the hidden layers' widths, in order
    dropout: float = 0.0  # dropout probability after each hidden layer

    def init(self, device: Any = None) -> TabularMlp:
        return TabularMlp(self.num_features, self.num_outputs, list(self.hidden_sizes), self.dropout, device or "cpu")
