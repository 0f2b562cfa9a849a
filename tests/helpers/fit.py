"""Short fits of the toy classifier (tests.helpers.toy) that several test folders share."""

from __future__ import annotations

import os
from pathlib import Path

import lightning as L
import pytest
import torch

import burnlike
from burnlike.data import DataLoaderBuilder
from burnlike.optim import AdamConfig, GradientClippingConfig, StepLrSchedulerConfig
from burnlike.record import DefaultRecorder
from burnlike.train import LearnerBuilder
from burnlike.train.checkpoint import KeepLastNCheckpoints
from burnlike.train.metric import AccuracyMetric, LossMetric
from tests.helpers.toy import Batch, Classifier, blobs, loader


def checkpointing_builder(root: str | Path, epochs: int, keep: int = 3) -> LearnerBuilder:
    """A builder that checkpoints every epoch (DefaultRecorder) and keeps the last `keep`."""
    return (LearnerBuilder(root).metric_valid_numeric(LossMetric()).with_file_checkpointer(DefaultRecorder())
            .with_checkpointing_strategy(KeepLastNCheckpoints(keep)).num_epochs(epochs).progress_bar(False))


def cpu_builder(root, epochs=2):
    """`checkpointing_builder` keeping 5, on the CPU, without the application logger."""
    return (LearnerBuilder(root).metric_valid_numeric(LossMetric()).with_file_checkpointer(DefaultRecorder())
            .with_checkpointing_strategy(KeepLastNCheckpoints(5)).num_epochs(epochs).progress_bar(False)
            .with_application_logger(False).devices(["cpu"]))


def metrics_builder(tmp_path, epochs=2):
    """A CPU builder with accuracy and loss metrics for both splits."""
    return (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .devices(["cpu"])
        .num_epochs(epochs)
        .progress_bar(False)
    )


def fit(b: LearnerBuilder) -> torch.nn.Module:
    """The toy classifier (seed 0) trained by `b` on 64 blobs, validated on 32: the trained model."""
    torch.manual_seed(0)
    return b.build(Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16, seed=1)).model


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    """Whether the two modules' state dicts hold equal tensors, in order."""
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def cuda(test):
    """GPU-only: marked `cuda` (`-m cuda` selects them) and skipped without a CUDA device."""
    return pytest.mark.cuda(pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")(test))


class StackingBatcher:
    """Stacks `(x, y)` items, as a Burn batcher does; takes the whole list in one call."""

    def batch(self, items: list[tuple[torch.Tensor, torch.Tensor]], device: object = None) -> Batch:
        xs, ys = zip(*items)
        return Batch(torch.stack(xs) * 2.0 - 1.0, torch.stack(ys))


CLIP = GradientClippingConfig.Norm(0.05)


def train(tmp_path, *, fast, devices=("cpu",), model=None, epochs=2, n=100, accumulation=3, lr=None,
          clip=CLIP, precision="32-true", drop_last=False, on_device=None, callbacks=()):
    """Train the toy classifier (seed 0) with Burn's clipping, a step LR schedule and accumulation."""
    burnlike.seed(0)
    model = model or Classifier()
    builder = (LearnerBuilder(tmp_path / ("fast" if fast else "default")).devices(list(devices)).num_epochs(epochs)
               .grads_accumulation(accumulation).metrics(AccuracyMetric(), LossMetric()).progress_bar(False)
               .with_application_logger(False).trainer_kwargs(precision=precision).callback(*callbacks))
    if fast:
        builder = builder.cuda_graph()
    learner = builder.build(model, AdamConfig(grad_clipping=clip), lr or StepLrSchedulerConfig(1e-2, 2, 0.5))
    data = DataLoaderBuilder(StackingBatcher()).batch_size(32).shuffle(1).drop_last(drop_last)
    if on_device is not None:
        data = data.on_device(on_device)
    result = learner.fit(data.build(blobs(n)), DataLoaderBuilder(StackingBatcher()).batch_size(50).build(blobs(50, seed=2)))
    return result.model.state_dict(), learner


class SignalAfter(L.Callback):
    """Sends this process `signum` after global step `step`, as a cluster's scheduler would."""

    def __init__(self, step: int, signum: int) -> None:
        self.step, self.signum = step, signum

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step == self.step:
            os.kill(os.getpid(), self.signum)
