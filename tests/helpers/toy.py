"""Small models and data for fast Learner tests (no MNIST needed)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from burnlike.module import Module
from burnlike.train import (
    ClassificationOutput,
    RegressionOutput,
    TrainOutput,
    TrainStep,
    ValidStep,
    backward,
)

# Why the fast path (`cuda_graph()`) runs a model on the CPU eagerly: the reason it logs.
EAGER_ON_CPU = ("torch sees no CUDA device" if not torch.cuda.is_available()
                else "the model is on cpu, not a CUDA device (trainer accelerator/devices)")


@dataclass
class Batch:
    x: torch.Tensor
    y: torch.Tensor


def collate(items: list[tuple[torch.Tensor, torch.Tensor]]) -> Batch:
    xs, ys = zip(*items)
    return Batch(torch.stack(xs), torch.stack(ys))


def blobs(n: int = 256, seed: int = 0, classes: int = 3) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    centers = torch.eye(classes, 4) * 4
    x = centers[y] + torch.randn(n, 4, generator=g)
    return TensorDataset(x, y)


def loader(n: int = 256, batch_size: int = 32, seed: int = 0) -> DataLoader:
    return DataLoader(blobs(n, seed), batch_size=batch_size, collate_fn=collate)


class Classifier(Module, TrainStep[Batch, ClassificationOutput], ValidStep[Batch, ClassificationOutput]):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)

    def step(self, batch: Batch) -> ClassificationOutput:
        out = self(batch.x)
        return ClassificationOutput(nn.functional.cross_entropy(out, batch.y), out, batch.y)

    def train_step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        item = self.step(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        return self.step(batch)


class Regressor(Module, TrainStep[Batch, RegressionOutput], ValidStep[Batch, RegressionOutput]):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def step(self, batch: Batch) -> RegressionOutput:
        out = self.linear(batch.x)
        target = batch.y.float().unsqueeze(1)
        return RegressionOutput(nn.functional.mse_loss(out, target), out, target)

    def train_step(self, batch: Batch) -> TrainOutput[RegressionOutput]:
        item = self.step(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: Batch) -> RegressionOutput:
        return self.step(batch)


class UntypedRegressor(Module):
    """Same as Regressor but with no type information: mismatches surface at the first step."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Regressor()

    def train_step(self, batch):  # noqa: ANN001, ANN201
        return self.inner.train_step(batch)

    def valid_step(self, batch):  # noqa: ANN001, ANN201
        return self.inner.valid_step(batch)


class SelfBackward(Classifier):
    """Calls loss.backward() itself, a PyTorch habit the Learner must reject clearly."""

    def train_step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        item = self.step(batch)
        return TrainOutput(self, item.loss.backward(), item)  # type: ignore[func-returns-value]


class FailsInTraining(Classifier):
    """Raises at its first train step: a run that fails mid-fit."""

    def train_step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        raise RuntimeError("boom")
