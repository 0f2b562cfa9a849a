"""Burn 0.20's `Learner::new(model, optim, lr_scheduler)`: the learning components of a run.

`SupervisedTraining(...).launch(Learner(model, optim, lr))` trains them. The guide's/0.19's learner
that `LearnerBuilder.build(model, optim, lr)` returns is the same components bound to a configured
Trainer (`burnlike.train.learner`, a subclass with `fit`), so `isinstance(x, Learner)` holds for both.
"""

from __future__ import annotations

from typing import Any

from torch import nn


class Learner:
    """`model` (TrainStep + ValidStep/InferenceStep), `optim` (a config, optimizer or torch factory),
    `lr_scheduler` (a float, or a Burn LR scheduler config/instance)."""

    def __init__(self, model: nn.Module, optim: Any, lr_scheduler: Any) -> None:
        self._model = model
        self.optim = optim
        self.lr_scheduler = lr_scheduler

    @property
    def model(self) -> nn.Module:
        return self._model

    def fit(self, train_loader: Any, valid_loader: Any = None) -> Any:
        raise TypeError(
            "Learner(model, optim, lr) holds what to train (Burn 0.20); train it with "
            "SupervisedTraining(dir, train_loader, valid_loader)....launch(learner), or build a fitting "
            "learner with LearnerBuilder(dir)....build(model, optim, lr).fit(train_loader, valid_loader)"
        )
