"""Burn 0.20/0.21's spelling: `SupervisedTraining(dir, train, valid)…launch(Learner(model, optim, lr))`.

`SupervisedTraining` is the `LearnerBuilder` with the loaders given up front, so every builder method
(metrics, num_epochs, with_file_checkpointer, early_stopping, summary, trainer_kwargs, …) and the one
Trainer translation are shared; `launch` builds and fits in one call and returns `LearningResult`.
With `with_training_strategy(TrainingStrategy.Custom(s))`, `s` (a `SupervisedLearningStrategy`) runs
the loop instead of a Trainer, over the same metrics, store, files and checkpointer settings.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from burnlike.train.builder import LearnerBuilder
from burnlike.train.checkpoint import default_checkpointing_strategy, newest_epoch_files
from burnlike.train.components import Learner
from burnlike.train.epoch_logs import EpochLogWriter
from burnlike.train.event import SupervisedTrainingEventProcessor
from burnlike.train.interrupter import Interrupter
from burnlike.train.learner import LearningResult
from burnlike.train.learning_strategy import (
    EarlyStoppingStrategies,
    LearningCheckpointer,
    SupervisedLearningStrategy,
    TrainingComponents,
)
from burnlike.train.logger import (
    install_application_logger,
    read_epochs,
    remove_experiment_log,
)
from burnlike.train.metric.store import MetricStore, Split
from burnlike.train.module import distinct_metrics
from burnlike.train.strategy import Execution, ExecutionStrategy, as_execution, is_learning_strategy

__all__ = ["LearningResult", "SupervisedTraining"]


class SupervisedTraining(LearnerBuilder):
    """`SupervisedTraining(directory, train_loader, valid_loader)`, configured like `LearnerBuilder`.

    Args:
        directory: The run dir: checkpoints, metric logs and `experiment.log` go there.
        dataloader_train: The training batches.
        dataloader_valid: The validation batches (None: no validation).

    Attributes:
        dataloader_train: The training batches.
        dataloader_valid: The validation batches.
    """

    def __init__(self, directory: str | Path, dataloader_train: Any, dataloader_valid: Any = None) -> None:
        super().__init__(directory)
        self.dataloader_train = dataloader_train
        self.dataloader_valid = dataloader_valid
        self._custom: SupervisedLearningStrategy | None = None

    def with_training_strategy(self, strategy: Execution | SupervisedLearningStrategy) -> SupervisedTraining:
        """`TrainingStrategy.…` (0.20), an `ExecutionStrategy.…` (0.21, Burn's `.into()`), or
        `TrainingStrategy.Custom(s)` with `s` a `SupervisedLearningStrategy` (your own loop).

        Args:
            strategy: Where and how to train: the devices, or your own loop.
        """
        if is_learning_strategy(strategy):
            self._custom = strategy  # type: ignore[assignment]
            self.settings = dataclasses.replace(self.settings, execution=None)
        else:
            self._custom = None
            self.learning_strategy(as_execution(strategy))
        return self

    def launch(self, learner: Learner) -> LearningResult:
        """Train `learner`'s model; without a strategy, on the device its parameters are on (Burn's default).

        Args:
            learner: The components: `Learner(model, optim, lr_scheduler)`.

        Returns:
            The trained model, the summary, the Trainer and the renderer.

        Raises:
            TypeError: `learner` is not a `Learner`.
        """
        if not isinstance(learner, Learner):
            raise TypeError(f"launch expects Learner(model, optim, lr), got {type(learner).__name__}")
        if self._custom is not None:
            return self._launch_custom(self._custom, learner)
        if self.settings.execution is None:
            device = next((p.device for p in learner.model().parameters()), None)
            if device is not None:
                self.learning_strategy(ExecutionStrategy.single(device))
        built = self.build(learner.model(), learner.optim, learner.lr_scheduler)
        result = built.fit(self.dataloader_train, self.dataloader_valid)
        return LearningResult(result.model, result.summary, result.trainer, result.renderer)

    def _launch_custom(self, strategy: SupervisedLearningStrategy, learner: Learner) -> LearningResult:
        """Burn's `SupervisedTraining::launch` with `TrainingStrategy::Custom`: the components from this
        builder's settings, then `strategy.train(...)`."""
        settings = self.settings
        lightning_only = settings.lightning_only_set()
        if lightning_only:
            raise ValueError(f"TrainingStrategy.Custom(strategy) runs your strategy's fit, not a Lightning Trainer: "
                             f"{', '.join(lightning_only)} has nothing to apply to; drop it, or run the default "
                             "strategy (ExecutionStrategy.single(device))")
        directory = self.artifact_dir
        directory.mkdir(parents=True, exist_ok=True)
        train = distinct_metrics(settings.train_metrics)
        metrics = {"train": train, "valid": distinct_metrics(settings.valid_metrics, exclude=train)}
        store = MetricStore()
        store.register([*metrics["train"], *metrics["valid"]])
        store.add_listener(EpochLogWriter(directory))
        checkpointer = None
        checkpoint, recorder = settings.checkpoint, settings.recorder
        if recorder is not None:
            checkpointer = LearningCheckpointer(directory / "checkpoint", recorder,
                                                settings.checkpointing_strategy or default_checkpointing_strategy())
            if checkpoint == "last":
                checkpoint = newest_epoch_files(directory, recorder.file_extension(), ("model", "optim", "scheduler"))
        elif checkpoint is not None:
            raise ValueError("checkpoint(epoch) needs with_file_checkpointer(recorder): there is nothing to resume from")
        if isinstance(checkpoint, int):  # the epochs before it, as Burn's store reads them back from the logs
            for split, split_metrics in metrics.items():
                for m in split_metrics:
                    for epoch, value in read_epochs(directory, split, m.name).items():
                        if epoch <= checkpoint:
                            store.record(Split(split), epoch, m.name, value)
        components = TrainingComponents(
            num_epochs=settings.num_epochs,
            checkpoint=checkpoint if isinstance(checkpoint, int) else None,
            checkpointer=checkpointer,
            grad_accumulation=settings.grads_accumulation,
            interrupter=settings.interrupter or Interrupter(),
            early_stopping=EarlyStoppingStrategies(settings.early_stopping) if settings.early_stopping else None,
            event_processor=SupervisedTrainingEventProcessor(metrics, store, settings.renderer, settings.numeric),
            event_store=store,
            summary=settings.summary,
            artifact_dir=directory,
        )
        handler = install_application_logger(settings.application_logger, directory)
        try:
            return strategy.train(learner, self.dataloader_train, self.dataloader_valid, components)
        finally:
            if handler is not None:
                remove_experiment_log(handler)
