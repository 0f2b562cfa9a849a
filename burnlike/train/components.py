"""Burn 0.20/0.21's `Learner::new(model, optim, lr_scheduler)`: the learning components of a run.

`SupervisedTraining(...).launch(Learner(model, optim, lr))` trains them. The guide's/0.19's learner
that `LearnerBuilder.build(model, optim, lr)` returns is the same components bound to a configured
Trainer (`burnlike.train.learner`, a subclass with `fit`), so `isinstance(x, Learner)` holds for both.

A custom learning strategy (`TrainingStrategy.Custom(strategy)`, burnlike.train.learning_strategy)
drives the components itself through Burn's methods: `lr_step()`, `lr_current()`,
`train_step(batch)`, `optimizer_step(grads)`, `fork(device)`, `model()` and the `load_*` records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from burnlike.autodiff import Gradients
from burnlike.optim.grads import GradientsParams
from burnlike.optim.lr_scheduler import ConstantLr, LrScheduler, LrSchedulerConfig
from burnlike.optim.optimizer import Optimizer, OptimizerConfig, TorchOptimizerFactory, as_optimizer
from burnlike.train.step import TrainOutput

LrOrScheduler = float | LrScheduler | LrSchedulerConfig


def as_scheduler(lr_or_scheduler: LrOrScheduler) -> LrScheduler:
    """A float as Burn's constant schedule, a config initialised, a scheduler as it is."""
    if isinstance(lr_or_scheduler, LrScheduler):
        return lr_or_scheduler
    if isinstance(lr_or_scheduler, (int, float)) and not isinstance(lr_or_scheduler, bool):
        return ConstantLr(float(lr_or_scheduler))
    init = getattr(lr_or_scheduler, "init", None)
    scheduler = init() if callable(init) else None
    if not isinstance(scheduler, LrScheduler):
        raise TypeError("lr_scheduler must be a float or a Burn LR scheduler config/instance "
                        f"(e.g. ConstantLr(1e-3), NoamLrSchedulerConfig(...)), got {type(lr_or_scheduler).__name__}")
    return scheduler


class Learner:
    """`model` (TrainStep + ValidStep/InferenceStep), `optim` (a config, optimizer or torch factory),
    `lr_scheduler` (a float, or a Burn LR scheduler config/instance).

    `optim` and `lr_scheduler` stay as given (the Trainer translation builds its own torch
    optimizer and LambdaLR from them); Burn's methods below initialise them on first use.

    Args:
        model: The model: a module with `train_step` and `valid_step` (or an inference step).
        optim: An optimizer config (`AdamConfig()`), an initialised `Optimizer`, or a torch
            factory `(params, lr=...) -> torch.optim.Optimizer`.
        lr_scheduler: A learning rate, or a Burn LR scheduler config or instance.

    Attributes:
        optim: The optimizer as given.
        lr_scheduler: The learning rate or scheduler as given.
    """

    def __init__(self, model: nn.Module, optim: Optimizer | OptimizerConfig | TorchOptimizerFactory,
                 lr_scheduler: LrOrScheduler) -> None:
        self._model = model
        self.optim = optim
        self.lr_scheduler = lr_scheduler
        self._lr = 0.0  # Burn's `Learner::new` starts at 0.0 until the first `lr_step`
        self._optimizer: Optimizer | None = None
        self._scheduler: LrScheduler | None = None

    def model(self) -> nn.Module:
        """The model being trained (Burn's `learner.model()`)."""
        return self._model

    def fit(self, train_loader: Any, valid_loader: Any = None) -> Any:
        """Refused with directions: these components are trained by `SupervisedTraining.launch`
        (Burn 0.20), or built into a fitting learner by `LearnerBuilder.build`.

        Args:
            train_loader: Not used.
            valid_loader: Not used.

        Raises:
            TypeError: Always, saying which call trains the components.
        """
        raise TypeError(
            "Learner(model, optim, lr) holds what to train (Burn 0.20); train it with "
            "SupervisedTraining(dir, train_loader, valid_loader)....launch(learner), or build a fitting "
            "learner with LearnerBuilder(dir)....build(model, optim, lr).fit(train_loader, valid_loader)"
        )

    # Burn's learner methods (custom learning strategies) -----------------------------------------
    def optimizer(self) -> Optimizer:
        """The initialised optimizer (`optim` as given, or its config's `init()`)."""
        if self._optimizer is None:
            self._optimizer = as_optimizer(self.optim)
        return self._optimizer

    def scheduler(self) -> LrScheduler:
        """The initialised LR scheduler (a float is Burn's constant schedule)."""
        if self._scheduler is None:
            self._scheduler = as_scheduler(self.lr_scheduler)
        return self._scheduler

    def fork(self, device: str | torch.device) -> None:
        """Move the model to `device` (Burn's `fork`: the model's parameters now live there).

        Args:
            device: The device, as torch names it.
        """
        self._model = self._model.to(device)

    def lr_current(self) -> float:
        """The learning rate of the last `lr_step` (0.0 before the first, as Burn's)."""
        return self._lr

    def lr_step(self) -> None:
        """Advance the LR scheduler one step; `lr_current()` is then its new rate."""
        self._lr = self.scheduler().step()

    def train_step(self, item: Any) -> TrainOutput[Any]:
        """The model's `train_step(item)`: forward and the (lazy) backward pass.

        Args:
            item: One batch.

        Raises:
            TypeError: The model has no `train_step`, or it returns no `TrainOutput`.
        """
        step = getattr(self._model, "train_step", None)
        if not callable(step):
            raise TypeError(f"{type(self._model).__name__} must implement train_step(batch) (burnlike.train.TrainStep)")
        out = step(item)
        if not isinstance(out, TrainOutput):
            raise TypeError(f"{type(self._model).__name__}.train_step must return TrainOutput(model, "
                            f"backward(loss), item), got {type(out).__name__}")
        return out

    def optimizer_step(self, grads: Gradients | GradientsParams) -> None:
        """Update the model with `grads` at `lr_current()` (Burn's `model.optimize(optim, lr, grads)`).
        `grads` is a `TrainOutput`'s `backward(loss)` or a `GradientsParams` (e.g. accumulated).

        Args:
            grads: The gradients to apply.

        Raises:
            TypeError: `grads` is neither.
        """
        if isinstance(grads, Gradients):
            grads = GradientsParams.from_grads(grads, self._model)
        if not isinstance(grads, GradientsParams):
            raise TypeError("optimizer_step expects the gradients of a train step (TrainOutput.grads) or a "
                            f"GradientsParams, got {type(grads).__name__}")
        self._model = self.optimizer().step(self._lr, self._model, grads)

    def load_model(self, record: Mapping[str, torch.Tensor]) -> None:
        """Load the model's weights from a state dict (what `model().state_dict()` gives).

        Args:
            record: The state dict.
        """
        self._model.load_state_dict(record)

    def load_optim(self, record: Mapping[str, Any]) -> None:
        """Load the optimizer's state, bound to the model's parameters.

        Args:
            record: A torch optimizer state dict.
        """
        optimizer = self.optimizer()
        params = [p for p in self._model.parameters() if p.requires_grad]
        optimizer._bind(params, self._lr).load_state_dict(dict(record))

    def load_scheduler(self, record: Any) -> None:
        """Burn's `load_scheduler(record)`: the LR scheduler continues from Burn's record of it (its
        `to_record()`: nil for a constant rate, Noam's step count, ...; burnlike's earlier
        `{"iteration": N}` state too); `lr_current()` is the rate it last gave.

        Args:
            record: Burn's record of the scheduler.

        Raises:
            ValueError: A record of another scheduler, saying what was expected.
        """
        scheduler = self.scheduler()
        if isinstance(record, Mapping) and set(record) <= {"iteration", "offset"} and "iteration" in record:
            scheduler.load_state_dict(dict(record))
        else:
            scheduler.load_record(record)
        self._lr = scheduler.lr_at(scheduler.iteration) if scheduler.iteration > 0 else 0.0
