"""TODO: docstring."""

from __future__ import annotations

from dataclasses import dataclass

import lightning as L
import torch
from torch import nn

import burnlike
import burnlike.train
from burnlike.module import Module
from burnlike.optim import AdamConfig
from burnlike.record import DefaultRecorder
from burnlike.train import (
    ClassificationOutput,
    InferenceStep,
    LearnerBuilder,
    MetricStore,
    RegressionOutput,
    SequenceOutput,
    Split,
    TrainOutput,
    TrainStep,
    backward,
)
from burnlike.train.metric import (
    AccuracyMetric,
    LossMetric,
    MetricContext,
)
from tests.helpers.toy import (
    Batch,
    Classifier,
    loader,
)


class InferenceOnly(Module, TrainStep[Batch, RegressionOutput], InferenceStep[Batch, RegressionOutput]):
    """Burn 0.20's traits: `inference_step`, types as the Protocol's parameters."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def step(self, batch):
        out = self.linear(batch.x)
        target = batch.y.float().unsqueeze(1)
        return RegressionOutput(nn.functional.mse_loss(out, target), out, target)

    def train_step(self, batch):
        item = self.step(batch)
        return TrainOutput(self, backward(item.loss), item)

    def inference_step(self, batch):
        return self.step(batch)


def fit(tmp_path, *callbacks, epochs=2, model=None, progress_bar=True, logger=None):
    burnlike.seed(0)
    builder = LearnerBuilder(tmp_path)
    if logger is not None:
        builder.with_metric_logger(logger)
    learner = (builder.metrics(AccuracyMetric(), LossMetric()).devices(["cpu"])
               .num_epochs(epochs).with_application_logger(False).progress_bar(progress_bar)
               .callback(*callbacks).build(model or Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(64, 16), loader(32, 16))  # 4 train batches, 2 valid batches
    return learner


def epoch(metric, *items):
    """Feed items as one epoch; return (epoch value, log lines)."""
    for item in items:
        metric.update(item, MetricContext())
    return metric.finish_epoch()


# A small sequence model: predict each token's successor (mod V) --------------------------------
V, S = 8, 6


@dataclass
class TokenBatch:
    tokens: torch.Tensor
    targets: torch.Tensor


class Successor(Module, TrainStep[TokenBatch, SequenceOutput], InferenceStep[TokenBatch, SequenceOutput]):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, 16)
        self.head = nn.Linear(16, V)

    def forward_sequence(self, batch: TokenBatch) -> SequenceOutput:
        logits = self.head(self.embed(batch.tokens))
        loss = nn.functional.cross_entropy(logits.reshape(-1, V), batch.targets.reshape(-1))
        return SequenceOutput(loss, logits, None, batch.targets)

    def train_step(self, batch: TokenBatch) -> TrainOutput[SequenceOutput]:
        item = self.forward_sequence(batch)
        return TrainOutput(self, backward(item.loss), item)

    def inference_step(self, batch: TokenBatch) -> SequenceOutput:
        return self.forward_sequence(batch)


NAN = float("nan")


def write_checkpoint(path, step, recorder=None, **extra):
    (recorder or DefaultRecorder()).record(
        {"state_dict": {}, "pytorch-lightning_version": L.__version__, "global_step": step, **extra}, path,
        exact_path=True)


class NoParameters(Classifier):
    """A train step over a model with no parameters (nothing to optimise)."""

    def __init__(self) -> None:
        super().__init__()
        del self.linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :3]


def quick(tmp_path, epochs: int = 1) -> LearnerBuilder:
    return (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(epochs).progress_bar(False)
            .devices(["cpu"]))


def builder(tmp_path, epochs=1):
    return (LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).devices(["cpu"]).num_epochs(epochs)
            .with_application_logger(False).progress_bar(False))


# Continuing a logger's run on resume -------------------------------------------------------------
def messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "burnlike.train"]


def item(logits, targets, loss=0.0):
    return ClassificationOutput(torch.as_tensor(loss), torch.as_tensor(logits, dtype=torch.float32),
                                torch.as_tensor(targets))


def store_with_pinned_strategies(values: dict[int, float], name: str = "Loss", split: str = "valid") -> MetricStore:
    store = MetricStore()
    for epoch, value in values.items():
        store.record(Split(split), epoch, name, value)
    return store


def builder_store(tmp_path, epochs):
    return (LearnerBuilder(tmp_path).metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .with_file_checkpointer(DefaultRecorder()).num_epochs(epochs).progress_bar(False))
