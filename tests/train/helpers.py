"""Models, builders and small readers shared by the tests of `burnlike.train` (tests/train/ and
tests/train/metric/): a regressor with Burn 0.20's `inference_step`, a token-successor sequence
model, a regressor that records the items of each batch (and its loaders), a classifier without parameters, the learner builders several files fit with, feeding a
metric one epoch, a metric store from a dict of epoch values, a bare checkpoint file, the
messages logged to `burnlike.train`, an evaluation renderer that keeps the metric states it gets and
a recorder with its own extension and file names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lightning as L
import torch
from torch import nn

import burnlike
from burnlike.data import DataLoaderBuilder
from burnlike.module import Module
from burnlike.optim import AdamConfig
from burnlike.record import DefaultRecorder
from burnlike.train import (
    InferenceStep,
    LearnerBuilder,
    MetricStore,
    RegressionOutput,
    SequenceOutput,
    Split,
    TrainOutput,
    TrainStep,
    ValidStep,
    backward,
)
from burnlike.train.metric import AccuracyMetric, LossMetric, MetricContext
from burnlike.train.renderer.base import (
    EvaluationName,
    EvaluationProgress,
    MetricsRendererEvaluation,
    MetricState,
    ProgressType,
)
from tests.helpers.toy import Batch, Classifier, loader

NAN = float("nan")


# --- models ---------------------------------------------------------------------------------------
class InferenceStepRegressor(Module, TrainStep[Batch, RegressionOutput], InferenceStep[Batch, RegressionOutput]):
    """A regressor in Burn 0.20's spelling: `inference_step` instead of `valid_step`, its types as the
    Protocols' parameters."""

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


class NoParameters(Classifier):
    """A train step over a model with no parameters (nothing to optimise)."""

    def __init__(self) -> None:
        super().__init__()
        del self.linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :3]


# A small sequence model: predict each token's successor (mod VOCAB).
VOCAB, SEQ_LEN = 8, 6


@dataclass
class TokenBatch:
    tokens: torch.Tensor
    targets: torch.Tensor


class Successor(Module, TrainStep[TokenBatch, SequenceOutput], InferenceStep[TokenBatch, SequenceOutput]):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward_sequence(self, batch: TokenBatch) -> SequenceOutput:
        logits = self.head(self.embed(batch.tokens))
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), batch.targets.reshape(-1))
        return SequenceOutput(loss, logits, None, batch.targets)

    def train_step(self, batch: TokenBatch) -> TrainOutput[SequenceOutput]:
        item = self.forward_sequence(batch)
        return TrainOutput(self, backward(item.loss), item)

    def inference_step(self, batch: TokenBatch) -> SequenceOutput:
        return self.forward_sequence(batch)


# --- builders and fits ----------------------------------------------------------------------------
class Seen(Module, TrainStep[Batch, RegressionOutput], ValidStep[Batch, RegressionOutput]):
    """A regressor that records the item ids (`x[:, 0]`) of each batch it trains and validates on."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(1, 1)
        self.trained: list[list[int]] = []
        self.validated: list[list[int]] = []

    def forward_regression(self, batch: Batch) -> RegressionOutput:
        out = self.linear(batch.x[:, 1:])
        return RegressionOutput(nn.functional.mse_loss(out, batch.y), out, batch.y)

    def train_step(self, batch: Batch) -> TrainOutput[RegressionOutput]:
        self.trained.append(batch.x[:, 0].long().tolist())
        item = self.forward_regression(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: Batch) -> RegressionOutput:
        self.validated.append(batch.x[:, 0].long().tolist())
        return self.forward_regression(batch)


class IdBatcher:
    """Item ids -> `Batch(x=[id, id / n], y=[2 * id / n])`."""

    def batch(self, items: list[int]) -> Batch:
        ids = torch.tensor(items, dtype=torch.float32)
        return Batch(torch.stack([ids, ids / 20], 1), (2 * ids / 20).unsqueeze(1))


def seen_loader(n: int, shuffle: int | None = 7, plain: bool = False) -> Any:
    """Items 0..n-1 in batches of 4: a seeded `DataLoaderBuilder` loader, or a plain torch one."""
    if plain:
        return torch.utils.data.DataLoader(list(range(n)), batch_size=4, shuffle=True, collate_fn=IdBatcher().batch,
                                           generator=torch.Generator().manual_seed(shuffle or 0))
    builder = DataLoaderBuilder(IdBatcher()).batch_size(4)
    return (builder.shuffle(shuffle) if shuffle is not None else builder).build(list(range(n)))


def valid_loss_builder(tmp_path, epochs: int = 1) -> LearnerBuilder:
    """On the CPU, the valid loss only, no progress display."""
    return (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(epochs).progress_bar(False)
            .devices(["cpu"]))


def silent_builder(tmp_path, epochs=1) -> LearnerBuilder:
    """On the CPU, accuracy and loss for both splits, neither an experiment log nor a progress display."""
    return (LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).devices(["cpu"]).num_epochs(epochs)
            .with_application_logger(False).progress_bar(False))


def fit_with_display(tmp_path, *callbacks, epochs=2, model=None, progress_bar=True, logger=None):
    """Fit the toy classifier (seed 0) with `callbacks` (a progress display); 4 train and 2 valid
    batches an epoch."""
    burnlike.seed(0)
    builder = LearnerBuilder(tmp_path)
    if logger is not None:
        builder.with_metric_logger(logger)
    learner = (builder.metrics(AccuracyMetric(), LossMetric()).devices(["cpu"])
               .num_epochs(epochs).with_application_logger(False).progress_bar(progress_bar)
               .callback(*callbacks).build(model or Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(64, 16), loader(32, 16))
    return learner


# --- metrics, stores, checkpoints, logs -----------------------------------------------------------
def feed_epoch(metric, *items):
    """Feed `items` to `metric` as one epoch; return (epoch value, Burn's log lines)."""
    for item in items:
        metric.update(item, MetricContext())
    return metric.finish_epoch()


def store_of(values: dict[int, float], name: str = "Loss", split: str | Split = Split.VALID) -> MetricStore:
    """A store holding `values` (epoch -> value) of one metric in one split; no metric registered."""
    store = MetricStore()
    for epoch, value in values.items():
        store.record(Split(split), epoch, name, value)
    return store


def write_checkpoint(path, step, recorder=None, **extra):
    """A minimal Lightning training checkpoint of `global_step` `step`, written as `path` exactly."""
    (recorder or DefaultRecorder()).record(
        {"state_dict": {}, "pytorch-lightning_version": L.__version__, "global_step": step, **extra}, path,
        exact_path=True)


def train_messages(caplog):
    """The messages logged to `burnlike.train`."""
    return [r.getMessage() for r in caplog.records if r.name == "burnlike.train"]


# --- renderers ------------------------------------------------------------------------------------
class StateLog(MetricsRendererEvaluation):
    """Keeps each test step's metric state."""

    def __init__(self) -> None:
        self.states: list[MetricState] = []

    def update_test(self, name: EvaluationName, state: MetricState) -> None:
        self.states.append(state)

    def render_test(self, item: EvaluationProgress, progress_indicators: list[ProgressType]) -> None:
        pass


class OwnNamesRecorder(DefaultRecorder):
    """A user's recorder with its own (dotted) extension, Burn's `FileRecorder::file_extension`, and
    its own file names: `path_for` (which a subclass may override) prefixes them with `run-`."""

    def file_extension(self) -> str:
        return "ckpt.burn"

    def path_for(self, path):
        named = super().path_for(path)
        return named.with_name(f"run-{named.name}")
