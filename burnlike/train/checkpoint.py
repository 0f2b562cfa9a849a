"""Burn's checkpointing and early-stopping strategies, run as Lightning callbacks.

Burn decides per epoch with a list of `Save`/`Delete(epoch)` actions; `FileCheckpointer` applies
them through `trainer.save_checkpoint`, so the file goes through the Trainer's CheckpointIO plugin
(Burn's recorders) and lands at `checkpoint/model-N.<ext>` (N = epoch from 1).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

import lightning as L
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping

log = logging.getLogger("burnlike.train")


class Split(str, Enum):
    TRAIN = "train"
    VALID = "valid"
    TEST = "test"  # Burn 0.21's Split::Test; a tagged test split logs under test/<tag>/ (the evaluator)


class Direction(str, Enum):
    LOWEST = "min"
    HIGHEST = "max"


class Aggregate(str, Enum):
    MEAN = "mean"


class MetricStore:
    """Epoch values per (split, metric name), fed by `StepModule` at each epoch end."""

    def __init__(self) -> None:
        self.values: dict[str, dict[int, float]] = {}

    def record(self, split: str, epoch: int, results: dict[str, tuple[float, Any]]) -> None:
        for name, (value, _) in results.items():
            self.values.setdefault(f"{split}/{name}", {})[epoch] = value

    def find_epoch(self, name: str, split: Split, direction: Direction) -> int | None:
        values = self.values.get(f"{Split(split).value}/{name}")
        if not values:
            return None
        pick = min if Direction(direction) is Direction.LOWEST else max
        best = pick(values.values())
        return min(e for e, v in values.items() if v == best)


@dataclass(frozen=True)
class Save:
    pass


@dataclass(frozen=True)
class Delete:
    epoch: int


CheckpointingAction = Save | Delete


class CheckpointingStrategy(Protocol):
    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]: ...


class KeepLastNCheckpoints:
    """Save every epoch, delete epoch − n."""

    def __init__(self, num_keep: int) -> None:
        if num_keep < 1:
            raise ValueError(f"KeepLastNCheckpoints: num_keep must be >= 1, got {num_keep}")
        self.num_keep = num_keep

    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]:
        actions: list[CheckpointingAction] = [Save()]
        if epoch > self.num_keep:
            actions.append(Delete(epoch - self.num_keep))
        return actions


class MetricCheckpointingStrategy:
    """Keep only the best epoch of `metric` in `split`; saves every epoch while it is not logged."""

    def __init__(self, metric: Any, aggregate: Aggregate = Aggregate.MEAN, direction: Direction = Direction.LOWEST,
                 split: Split = Split.VALID) -> None:
        self.name = metric if isinstance(metric, str) else metric.name
        self.direction, self.split = Direction(direction), Split(split)
        self.current: int | None = None

    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]:
        best = store.find_epoch(self.name, self.split, self.direction)
        if best is None:
            return [Save()]
        actions: list[CheckpointingAction] = []
        if self.current is not None and self.current != best:
            actions.append(Delete(self.current))
        if best == epoch:
            actions.append(Save())
        self.current = best
        return actions


class ComposedCheckpointingStrategy:
    """Save if any strategy saves; delete an epoch only once every strategy has deleted it."""

    def __init__(self, strategies: list[Any]) -> None:
        self.strategies = strategies
        self.deleted: list[set[int]] = [set() for _ in strategies]

    @staticmethod
    def builder() -> ComposedCheckpointingStrategyBuilder:
        return ComposedCheckpointingStrategyBuilder()

    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]:
        save = False
        candidates: set[int] = set()
        for i, strategy in enumerate(self.strategies):
            actions = strategy.checkpointing(epoch, store)
            if not actions:  # this strategy doesn't want the current epoch: count it as deleted
                self.deleted[i].add(epoch)
            for action in actions:
                if isinstance(action, Save):
                    save = True
                else:
                    self.deleted[i].add(action.epoch)
                    candidates.add(action.epoch)
        actions: list[CheckpointingAction] = [Save()] if save else []
        for e in sorted(candidates):
            if all(e in d for d in self.deleted):
                actions.append(Delete(e))
                for d in self.deleted:
                    d.discard(e)
        return actions


class ComposedCheckpointingStrategyBuilder:
    def __init__(self) -> None:
        self._strategies: list[Any] = []

    def add(self, strategy: Any) -> ComposedCheckpointingStrategyBuilder:
        self._strategies.append(strategy)
        return self

    def build(self) -> ComposedCheckpointingStrategy:
        return ComposedCheckpointingStrategy(self._strategies)


def default_checkpointing_strategy() -> ComposedCheckpointingStrategy:
    """Burn's default: keep the last 2 epochs plus the best valid loss."""
    return ComposedCheckpointingStrategy([KeepLastNCheckpoints(2), MetricCheckpointingStrategy("Loss")])


def checkpoint_path(artifact_dir: str | Path, epoch: int, extension: str) -> Path:
    return Path(artifact_dir) / "checkpoint" / f"model-{epoch}.{extension}"


class FileCheckpointer(Checkpoint):
    """Applies a Burn checkpointing strategy after each epoch (train + valid), like Burn's loop.

    A `Checkpoint` subclass, so Lightning runs it after the module's own epoch-end hook (the train
    metrics are final by then) and keeps its state (store, strategy) inside each checkpoint.
    """

    def __init__(self, artifact_dir: str | Path, extension: str, strategy: Any, store: MetricStore) -> None:
        self.artifact_dir = Path(artifact_dir)
        self.extension = extension
        self.strategy = strategy
        self.store = store

    def path(self, epoch: int) -> Path:
        return checkpoint_path(self.artifact_dir, epoch, self.extension)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking or getattr(trainer, "fast_dev_run", False):
            return
        epoch = trainer.current_epoch + 1
        for action in self.strategy.checkpointing(epoch, self.store):
            if isinstance(action, Save):
                log.info("saving checkpoint %s", self.path(epoch))
                trainer.save_checkpoint(self.path(epoch))
            elif self.path(action.epoch).exists() and trainer.is_global_zero:
                log.info("removing checkpoint %s", self.path(action.epoch))
                trainer.strategy.remove_checkpoint(self.path(action.epoch))

    def state_dict(self) -> dict[str, Any]:
        return {"store": {k: dict(v) for k, v in self.store.values.items()},
                "strategy": _strategy_state(self.strategy)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for key, values in state_dict.get("store", {}).items():
            self.store.values.setdefault(key, {}).update({int(e): float(v) for e, v in values.items()})
        _load_strategy_state(self.strategy, state_dict.get("strategy"))


def _strategy_state(strategy: Any) -> Any:
    if isinstance(strategy, ComposedCheckpointingStrategy):
        return {"deleted": [sorted(d) for d in strategy.deleted],
                "children": [_strategy_state(s) for s in strategy.strategies]}
    if isinstance(strategy, MetricCheckpointingStrategy):
        return {"current": strategy.current}
    return None


def _load_strategy_state(strategy: Any, state: Any) -> None:
    if not state:
        return
    if isinstance(strategy, ComposedCheckpointingStrategy):
        strategy.deleted = [set(d) for d in state.get("deleted", [])] or strategy.deleted
        for child, child_state in zip(strategy.strategies, state.get("children", [])):
            _load_strategy_state(child, child_state)
    elif isinstance(strategy, MetricCheckpointingStrategy):
        strategy.current = state.get("current")


@dataclass(frozen=True)
class StoppingCondition:
    """Burn's `StoppingCondition::NoImprovementSince { n_epochs }`."""

    n_epochs: int

    @classmethod
    def no_improvement_since(cls, n_epochs: int) -> StoppingCondition:
        return cls(n_epochs)


class MetricEarlyStoppingStrategy:
    """Stop when `metric` in `split` has not strictly improved for `n_epochs` epochs."""

    def __init__(self, metric: Any, aggregate: Aggregate = Aggregate.MEAN, direction: Direction = Direction.LOWEST,
                 split: Split = Split.VALID, condition: StoppingCondition = StoppingCondition(1)) -> None:
        self.name = metric if isinstance(metric, str) else metric.name
        self.direction, self.split, self.condition = Direction(direction), Split(split), condition
        self.warmup_epochs: int | None = None
        if condition.n_epochs < 1:
            raise ValueError(f"StoppingCondition n_epochs must be >= 1, got {condition.n_epochs}")

    def with_warmup_epochs(self, warmup: int | None) -> MetricEarlyStoppingStrategy:
        """Never stop during the first `warmup` epochs (they still count towards no-improvement)."""
        if warmup is not None and (not isinstance(warmup, int) or warmup < 0):
            raise ValueError(f"with_warmup_epochs: expected None or an integer >= 0, got {warmup!r}")
        self.warmup_epochs = warmup
        return self

    def to_callback(self) -> EarlyStopping:
        # Missing metric: Burn doesn't stop, so strict=False; a strict improvement resets the count.
        return _WarmupEarlyStopping(
            self.warmup_epochs or 0,
            monitor=f"{self.split.value}/{self.name}",
            mode=self.direction.value,
            patience=self.condition.n_epochs,
            min_delta=0.0,
            strict=False,
            check_on_train_epoch_end=self.split is Split.TRAIN,
            verbose=False,
        )


class _WarmupEarlyStopping(EarlyStopping):
    """Lightning's EarlyStopping that keeps counting during Burn's warm-up epochs but does not stop."""

    def __init__(self, warmup_epochs: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.warmup_epochs = warmup_epochs
        self._in_warmup = False

    def _run_early_stopping_check(self, trainer: L.Trainer) -> None:
        self._in_warmup = trainer.current_epoch + 1 <= self.warmup_epochs
        super()._run_early_stopping_check(trainer)

    def _evaluate_stopping_criteria(self, current: Any) -> tuple[bool, str | None]:
        should_stop, reason = super()._evaluate_stopping_criteria(current)
        return (False, None) if self._in_warmup else (should_stop, reason)
