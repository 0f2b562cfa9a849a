"""Burn's custom learning strategies (burn-train `learner/supervised/strategies/base.rs`):
`TrainingStrategy.Custom(strategy)` hands the whole loop to `strategy.fit(...)`.

A Burn user's `impl SupervisedLearningStrategy for MyStrategy { fn fit(...) }` ports as a subclass
with a `fit` method. It gets Burn's `TrainingComponents` (the epochs, the checkpoint to resume
from, the checkpointer, the interrupter, early stopping, the event processor and the metric
store), the `Learner` (its `lr_step`, `train_step`, `optimizer_step`, …) and the data loaders, and
returns the trained model with the event processor. `train` (Burn's default method) loads the
checkpoint, reports `Start`, runs `fit` and reports `End` with the summary.

The loop is the user's, so no Lightning Trainer runs it: the metrics, the metric store, Burn's
metric files, the renderer and the checkpoint files are the same ones a Lightning fit uses.
Lightning's own custom loops (its `Strategy`s) still go through `TrainingStrategy.Custom` too, and
run in the Trainer.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from burnlike.record.checkpoint.epoch_files import epoch_file
from burnlike.record.checkpoint.lightning_dict import encode_checkpoint
from burnlike.record.checkpoint.value import decode_value
from burnlike.record.error import RecordError
from burnlike.record.format.location import AnyPath
from burnlike.record.format.optimizer_record import (
    burn_optimizer,
    optimizer_params,
    param_table,
    record_to_state,
    state_to_record,
)
from burnlike.train.checkpoint import CheckpointingStrategy, Delete, MetricEarlyStoppingStrategy, Save
from burnlike.train.components import Learner
from burnlike.train.event import LearnerEvent, SupervisedTrainingEventProcessor
from burnlike.train.interrupter import Interrupter
from burnlike.train.learner import LearningResult
from burnlike.train.metric.store import MetricStore
from burnlike.train.plot import plot_metrics
from burnlike.train.summary import LearnerSummary

if TYPE_CHECKING:  # pragma: no cover
    from burnlike.record.format.recorder import Recorder

log = logging.getLogger("burnlike.train")

__all__ = [
    "CustomLearningStrategy",
    "EarlyStoppingStrategies",
    "LearningCheckpointer",
    "SupervisedLearningStrategy",
    "TrainingComponents",
]

_OPTIM_KEY = "optimizer"  # optim-N of an optimizer Burn has no record for: {"optimizer": torch state}


class LearningCheckpointer:
    """Burn's `LearningCheckpointer`: after each epoch the checkpointing strategy decides; a save
    writes `checkpoint/model-N`, `optim-N` and `scheduler-N` through the recorder (Burn's files: the
    module record, Burn's optimizer record for Adam, AdamW, SGD, RMSProp and AdaGrad, Burn's LR
    scheduler record), each durably through a temp file; a delete removes the three.

    Args:
        folder: The run's `checkpoint/` folder.
        recorder: The files' format.
        strategy: Which epochs' checkpoints to keep.

    Attributes:
        folder: The run's `checkpoint/` folder.
        recorder: The files' format.
        strategy: Which epochs' checkpoints to keep.
    """

    def __init__(self, folder: AnyPath, recorder: Recorder, strategy: CheckpointingStrategy) -> None:
        self.folder = folder
        self.recorder = recorder
        self.strategy = strategy

    def path(self, kind: str, epoch: int) -> AnyPath:
        """The file of `kind` for `epoch` (`checkpoint/model-3.mpk`).

        Args:
            kind: "model", "optim" or "scheduler".
            epoch: The epoch, from 1.
        """
        return epoch_file(self.folder, kind, epoch, self.recorder.file_extension())

    def checkpoint(self, learner: Learner, epoch: int, store: MetricStore) -> None:
        """After epoch `epoch`: save and delete what the strategy says.

        Args:
            learner: The learning components.
            epoch: The epoch just finished.
            store: The run's metric store (a metric-based strategy reads it).
        """
        for action in self.strategy.checkpointing(epoch, store):
            if isinstance(action, Save):
                self.save(learner, epoch)
            elif isinstance(action, Delete):
                for kind in ("scheduler", "optim", "model"):
                    path = self.path(kind, action.epoch)
                    if path.exists():
                        log.debug("removing checkpoint %s", path)
                        path.unlink()

    def save(self, learner: Learner, epoch: int) -> None:
        """Write `model-N`, `optim-N` and `scheduler-N` for `epoch`.

        Args:
            learner: The learning components.
            epoch: The epoch.
        """
        log.debug("saving checkpoint %s", self.path("model", epoch))
        model = learner.model()
        self.recorder.save_module(model, self.path("model", epoch), exact_path=True, durable=True)
        self.recorder.record(self._optim_record(learner, model), self.path("optim", epoch), exact_path=True,
                             durable=True)
        self.recorder.record(learner.scheduler().to_record(), self.path("scheduler", epoch),
                             exact_path=True, durable=True)

    def _optim_record(self, learner: Learner, model: nn.Module) -> Any:
        bound = learner.optimizer()._torch  # None before the first step: nothing to record yet
        state = bound.state_dict() if bound is not None else {"state": {}, "param_groups": []}
        name = burn_optimizer(bound) if bound is not None else None
        table = param_table(model, optimizer_params(bound), self.recorder.burn_version) \
            if bound is not None and name is not None else None
        if name is not None and table is not None:
            item, _ = state_to_record(state["state"], name, table, self.recorder.burn_version, lazy=True)
            return item
        return encode_checkpoint({_OPTIM_KEY: state}, self.recorder)

    def load_checkpoint(self, learner: Learner, device: str | torch.device | None, epoch: int) -> Learner:
        """The learner with epoch `epoch`'s model, optimizer and scheduler states put back.

        Args:
            learner: The learning components to restore.
            device: Where the model goes (None: where it is).
            epoch: The epoch whose checkpoint to load.

        Raises:
            RecordError: A file is missing or doesn't fit the learner.
        """
        for kind in ("model", "optim", "scheduler"):
            if not self.path(kind, epoch).exists():
                raise FileNotFoundError(f"checkpoint({epoch}): no {kind} file at {self.path(kind, epoch)}")
        model = learner.model()
        if device is not None:
            learner.fork(device)
            model = learner.model()
        self.recorder.load_module(model, self.path("model", epoch))
        self._load_optim(learner, model, self.path("optim", epoch))
        path = self.path("scheduler", epoch)
        record = self.recorder.load(path, exact_path=True)
        try:
            learner.load_scheduler(record)
        except ValueError as e:
            raise RecordError(f"not the record of {learner.scheduler().name} ({e})", str(path)) from None
        return learner

    def _load_optim(self, learner: Learner, model: nn.Module, path: AnyPath) -> None:
        item = self.recorder.load(path, exact_path=True)
        params = [p for p in model.parameters() if p.requires_grad]
        bound = learner.optimizer()._bind(params, learner.lr_current())
        if isinstance(item, dict) and (_OPTIM_KEY in item or not item):
            state = decode_value(item, str(path)).get(_OPTIM_KEY) if item else None
            if state:
                bound.load_state_dict(state)
            return
        name = burn_optimizer(bound)
        table = param_table(model, optimizer_params(bound), self.recorder.burn_version) if name is not None else None
        if name is None or table is None:
            raise RecordError(f"a Burn optimizer record, but the learner's optimizer ({type(bound).__name__}) "
                              "has none (Adam, AdamW, SGD, RMSProp and AdaGrad do)", str(path))
        groups = bound.state_dict()["param_groups"]
        state = record_to_state(item, name, table, groups, str(path), params=optimizer_params(bound))
        bound.load_state_dict({"state": state, "param_groups": groups})


class EarlyStoppingStrategies:
    """The builder's early-stopping strategies as Burn's one `early_stopping`: stop when any says so.

    Args:
        strategies: The strategies; each sees every epoch.

    Attributes:
        strategies: The strategies.
    """

    def __init__(self, strategies: Sequence[MetricEarlyStoppingStrategy]) -> None:
        self.strategies = list(strategies)

    def should_stop(self, epoch: int, store: MetricStore) -> bool:
        """Whether any strategy says to stop after `epoch`.

        Args:
            epoch: The epoch just finished.
            store: The run's metric store.
        """
        return any([s.should_stop(epoch, store) for s in self.strategies])  # each sees every epoch


@dataclass
class TrainingComponents:
    """Burn's `TrainingComponents`: what `SupervisedLearningStrategy.fit` works with."""

    num_epochs: int  # the last epoch to train
    checkpoint: int | None  # the epoch to resume from (None: a fresh start)
    checkpointer: LearningCheckpointer | None  # saves each epoch's files (None: no checkpoints)
    grad_accumulation: int | None  # batches per optimizer step (None: 1)
    interrupter: Interrupter  # the stop flag the loop checks between steps
    early_stopping: EarlyStoppingStrategies | None  # asked after each epoch (None: never stop early)
    event_processor: SupervisedTrainingEventProcessor  # takes the loop's events: metrics, logs, renderer
    event_store: MetricStore  # every epoch's metric values
    summary: bool = False  # print the summary table at the end
    artifact_dir: AnyPath | None = None  # the run dir (metrics.png goes there)


class SupervisedLearningStrategy(ABC):
    """Burn's `SupervisedLearningStrategy` trait: implement `fit`; `train` runs it."""

    def train(self, learner: Learner, dataloader_train: Any, dataloader_valid: Any,
              training_components: TrainingComponents) -> LearningResult:
        """Resume from the checkpoint if one is set, run `fit` between `Start` and `End`, and return
        the model in eval mode with the summary and the renderer (Burn's `LearningResult`).

        Args:
            learner: The learning components.
            dataloader_train: The training batches.
            dataloader_valid: The validation batches.
            training_components: The run's settings and services.
        """
        components = training_components
        starting_epoch = 1
        if components.checkpoint is not None:
            if components.checkpointer is not None:
                learner = components.checkpointer.load_checkpoint(learner, None, components.checkpoint)
            starting_epoch = components.checkpoint + 1
        components.event_processor.process_train(LearnerEvent.Start)
        model, processor = self.fit(components, learner, dataloader_train, dataloader_valid, starting_epoch)
        summary = None
        if components.summary:
            summary = LearnerSummary.from_store(components.event_store, processor.numeric_names("train"),
                                                processor.numeric_names("valid"))
            if processor.renderer() is None:
                print(summary, flush=True)
            if components.artifact_dir is not None:
                plot_metrics(summary, components.artifact_dir / "metrics.png")
        processor.process_train(LearnerEvent.End(summary))
        model.eval()
        return LearningResult(model, summary, None, processor.renderer())

    @abstractmethod
    def fit(self, training_components: TrainingComponents, learner: Learner, dataloader_train: Any,
            dataloader_valid: Any, starting_epoch: int) -> tuple[nn.Module, SupervisedTrainingEventProcessor]:
        """The training loop, from `starting_epoch` to `training_components.num_epochs`.

        Args:
            training_components: The run's settings and services (events, checkpointer, interrupter ...).
            learner: The learning components: `train_step`, `optimizer_step`, `lr_step` ...
            dataloader_train: The training batches.
            dataloader_valid: The validation batches.
            starting_epoch: The first epoch to train (after a resume: the checkpoint's + 1).

        Returns:
            The trained model and the event processor.
        """


CustomLearningStrategy = SupervisedLearningStrategy
"""Burn's `CustomLearningStrategy<LC>` (an Arc of a `SupervisedLearningStrategy`): the same class."""
