"""Burn 0.20/0.21's spelling: `SupervisedTraining(dir, train, valid)…launch(Learner(model, optim, lr))`.

`SupervisedTraining` is the `LearnerBuilder` with the loaders given up front, so every builder method
(metrics, num_epochs, with_file_checkpointer, early_stopping, summary, trainer_kwargs, …) and the one
Trainer translation are shared; `launch` builds and fits in one call and returns `LearningResult`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from burnlike.train.builder import LearnerBuilder
from burnlike.train.components import Learner
from burnlike.train.learner import TrainingResult
from burnlike.train.strategy import Execution, ExecutionStrategy, as_execution


@dataclass
class LearningResult(TrainingResult):
    """Burn 0.20's name for the result: `model` (eval mode), `summary`, the `trainer` and the `renderer`."""


class SupervisedTraining(LearnerBuilder):
    """`SupervisedTraining(directory, train_loader, valid_loader)`, configured like `LearnerBuilder`."""

    def __init__(self, directory: str | Path, dataloader_train: Any, dataloader_valid: Any = None) -> None:
        super().__init__(directory)
        self.dataloader_train = dataloader_train
        self.dataloader_valid = dataloader_valid

    def with_training_strategy(self, strategy: Execution) -> SupervisedTraining:
        """`TrainingStrategy.…` (0.20) or an `ExecutionStrategy.…` (0.21, Burn's `.into()`)."""
        self._execution = as_execution(strategy)
        return self

    def launch(self, learner: Learner) -> LearningResult:
        """Train `learner`'s model; without a strategy, on the device its parameters are on (Burn's default)."""
        if not isinstance(learner, Learner):
            raise TypeError(f"launch expects Learner(model, optim, lr), got {type(learner).__name__}")
        if self._execution is None:
            device = next((p.device for p in learner.model.parameters()), None)
            if device is not None:
                self._execution = ExecutionStrategy.single(device)
        built = self.build(learner.model, learner.optim, learner.lr_scheduler)
        result = built.fit(self.dataloader_train, self.dataloader_valid)
        return LearningResult(result.model, result.summary, result.trainer, result.renderer)
