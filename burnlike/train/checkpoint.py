"""Burn's checkpointing and early-stopping strategies, run as Lightning callbacks.

Burn decides per epoch with a list of `Save`/`Delete(epoch)` actions; `FileCheckpointer` applies
them in Burn's per-epoch layout (`burnlike.record.checkpoint.epoch_files`): `checkpoint/model-N.<ext>`
a plain module record, `optim-N` (Burn's optimizer record), `scheduler-N`, and `trainer-N` (the rest
of Lightning's checkpoint, written through the Trainer's CheckpointIO plugin, last). N = epoch from 1.
Both kinds of strategy read the epoch values from the run's metric store (`StepModule.store`).
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

import lightning as L
from lightning.pytorch.callbacks import Checkpoint
from torch import nn

from burnlike._lightning import DecidingEarlyStopping, state_key
from burnlike.checks import positive_int
from burnlike.record.checkpoint.epoch_files import KINDS, epoch_file, epoch_of, save_parts
from burnlike.record.checkpoint.lightning_dict import is_checkpoint
from burnlike.record.checkpoint.shard_folder import is_sharded_checkpoint, read_training_state
from burnlike.record.error import RecordError
from burnlike.record.format import registry
from burnlike.record.format.files import remove_stale_temps
from burnlike.record.format.location import AnyPath, RemotePath, as_path
from burnlike.record.format.recorder import Recorder
from burnlike.train.metric.base import Metric
from burnlike.train.metric.store import Aggregate, Direction, MetricStore, Split
from burnlike.train.module import StepModule
from burnlike.train.sharded import CompactShards, full_model_state, model_skeleton, whole_model

__all__ = [  # Split/Direction/Aggregate/MetricStore live in metric/store.py; kept importable here
    "Aggregate", "CheckpointingAction", "CheckpointingStrategy", "ComposedCheckpointingStrategy",
    "ComposedCheckpointingStrategyBuilder", "Delete", "Direction", "FileCheckpointer", "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy", "MetricEarlyStopping", "MetricEarlyStoppingStrategy", "MetricStore", "Save",
    "Split", "StoppingCondition", "checkpoint_path", "default_checkpointing_strategy",
]

log = logging.getLogger("burnlike.train")


class CheckpointingAction:
    """Burn's `CheckpointingAction::{Save, Delete(epoch)}`: `CheckpointingAction.Save` (a value, as
    Burn's unit variant) and `CheckpointingAction.Delete(epoch)`; `Save()`/`Delete(epoch)` too."""

    Save: ClassVar[Save]
    """Save the current epoch's checkpoint."""
    Delete: ClassVar[type[Delete]]
    """Delete an earlier epoch's checkpoint: `CheckpointingAction.Delete(epoch)`."""


@dataclass(frozen=True)
class Save(CheckpointingAction):
    """Save the current epoch's checkpoint."""


@dataclass(frozen=True)
class Delete(CheckpointingAction):
    """Delete the checkpoint of `epoch`."""

    epoch: int  # the epoch whose files to remove


CheckpointingAction.Save, CheckpointingAction.Delete = Save(), Delete


class CheckpointingStrategy(ABC):
    """Burn's `CheckpointingStrategy` trait: which checkpoints to save and delete after `epoch`.

    State that must survive a resume goes through `state_dict`/`load_state_dict` (none by default)."""

    @abstractmethod
    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]:
        """The actions after `epoch`: `Save()` for this epoch, `Delete(n)` for earlier ones.

        Args:
            epoch: The epoch just finished, from 1.
            store: The run's metric store (its epoch values).
        """
        ...

    def state_dict(self) -> dict[str, Any]:
        """What must survive a resume (saved in each checkpoint)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027  (optional: stateless by default)
        """Restore what `state_dict` returned.

        Args:
            state: The saved state.
        """
        pass


class KeepLastNCheckpoints(CheckpointingStrategy):
    """Save every epoch, delete epoch − n.

    Args:
        num_keep: How many epochs' checkpoints to keep, >= 1.

    Attributes:
        num_keep: How many epochs' checkpoints to keep.
    """

    def __init__(self, num_keep: int) -> None:
        self.num_keep = positive_int(num_keep, "KeepLastNCheckpoints: num_keep")

    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]:
        actions: list[CheckpointingAction] = [Save()]
        if epoch > self.num_keep:
            actions.append(Delete(epoch - self.num_keep))
        return actions


def _watched(metric: Metric | str, direction: Direction | None) -> tuple[str, Direction | None]:
    """Name and direction of the metric a strategy watches. `direction=None` means the metric's own
    `higher_is_better` (for a name: the registered metric's, looked up in the store when needed)."""
    if isinstance(metric, str):
        return metric, None if direction is None else Direction(direction)
    if direction is None:
        direction = Direction.of(metric.higher_is_better)
        if direction is None:
            raise ValueError(f"{type(metric).__name__} ({metric.name!r}) has no direction: pass direction=")
    return metric.name, Direction(direction)


class MetricCheckpointingStrategy(CheckpointingStrategy):
    """Keep only the best epoch of `metric` in `split`; saves every epoch while it is not logged.

    Args:
        metric: The metric, or its name.
        aggregate: How the epoch's steps make one value.
        direction: Which way is better (None: the metric's own `higher_is_better`).
        split: The split whose values count.

    Attributes:
        current: The epoch whose checkpoint is kept (None: none yet).

    Raises:
        ValueError: `direction` is None and the metric has no direction of its own.
    """

    def __init__(self, metric: Metric | str, aggregate: Aggregate = Aggregate.MEAN, direction: Direction | None = None,
                 split: Split = Split.VALID) -> None:
        self.name, self.direction = _watched(metric, direction)
        self.aggregate, self.split = Aggregate(aggregate), Split(split)
        self.current: int | None = None

    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]:
        best = store.find_epoch(self.name, self.split, self.direction, self.aggregate)
        if best is None:  # no best value yet (not logged, or NaN): Burn counts this epoch as the best
            best = epoch
        actions: list[CheckpointingAction] = []
        if self.current is not None and self.current != best:
            actions.append(Delete(self.current))
        if best == epoch:
            actions.append(Save())
        self.current = best
        return actions

    def state_dict(self) -> dict[str, Any]:
        return {"current": self.current}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.current = state.get("current")


class ComposedCheckpointingStrategy(CheckpointingStrategy):
    """Save if any strategy saves; delete an epoch only once every strategy has deleted it.

    Args:
        strategies: The strategies.

    Attributes:
        strategies: The strategies.
        deleted: Per strategy, the epochs it has deleted that another still keeps.
    """

    def __init__(self, strategies: list[CheckpointingStrategy]) -> None:
        self.strategies = strategies
        self.deleted: list[set[int]] = [set() for _ in strategies]

    @staticmethod
    def builder() -> ComposedCheckpointingStrategyBuilder:
        """Burn's builder: `ComposedCheckpointingStrategy.builder().add(a).add(b).build()`."""
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
                elif isinstance(action, Delete):
                    self.deleted[i].add(action.epoch)
                    candidates.add(action.epoch)
        decided: list[CheckpointingAction] = [Save()] if save else []
        for e in sorted(candidates):
            if all(e in d for d in self.deleted):
                decided.append(Delete(e))
                for d in self.deleted:
                    d.discard(e)
        return decided

    def state_dict(self) -> dict[str, Any]:
        return {"deleted": [sorted(d) for d in self.deleted], "children": [s.state_dict() for s in self.strategies]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.deleted = [set(d) for d in state.get("deleted", [])] or self.deleted
        for child, child_state in zip(self.strategies, state.get("children", [])):
            if child_state:
                child.load_state_dict(child_state)


class ComposedCheckpointingStrategyBuilder:
    """Collects strategies for a `ComposedCheckpointingStrategy`."""

    def __init__(self) -> None:
        self._strategies: list[CheckpointingStrategy] = []

    def add(self, strategy: CheckpointingStrategy) -> ComposedCheckpointingStrategyBuilder:
        """Add a strategy.

        Args:
            strategy: The strategy.
        """
        self._strategies.append(strategy)
        return self

    def build(self) -> ComposedCheckpointingStrategy:
        """The composed strategy of those added."""
        return ComposedCheckpointingStrategy(self._strategies)


def default_checkpointing_strategy() -> ComposedCheckpointingStrategy:
    """Burn's default: keep the last 2 epochs plus the best valid loss."""
    best_loss = MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID)
    return ComposedCheckpointingStrategy([KeepLastNCheckpoints(2), best_loss])


def checkpoint_path(artifact_dir: str | os.PathLike[str] | RemotePath, epoch: int, extension: str,
                    kind: str = "model") -> AnyPath:
    """`<artifact_dir>/checkpoint/<kind>-<epoch>.<extension>`.

    Args:
        artifact_dir: The run dir.
        epoch: The epoch, from 1.
        extension: The recorder's file extension (`mpk`, `mpk.gz` ...).
        kind: "model", "optim", "scheduler" or "trainer".
    """
    return epoch_file(as_path(artifact_dir) / "checkpoint", kind, epoch, extension)


PREEMPTED = "preempted"  # `checkpoint/preempted-<global step>.<ext>`: a whole checkpoint saved on a signal


def newest_checkpoint(artifact_dir: str | os.PathLike[str] | RemotePath, extension: str,
                      unreadable: list[tuple[AnyPath, str]] | None = None) -> AnyPath | None:
    """The complete checkpoint with the highest global step in `<artifact_dir>/checkpoint`:
    `trainer-N` (per-epoch layout), `preempted-S` (mid-epoch, on a signal) or an older single-file
    `model-N`. A `model-N` module record without its `trainer-N` is an incomplete epoch: skipped.
    Files that can't be read (a save cut short) are skipped too, and listed in `unreadable` as
    (path, why) when a list is given."""
    folder = as_path(artifact_dir) / "checkpoint"
    if not folder.is_dir():
        return None
    found: list[tuple[int, bool, str, AnyPath]] = []
    for path in folder.iterdir():
        kind = path.name.partition("-")[0]
        if path.name.endswith("." + extension) and kind in ("trainer", "model", PREEMPTED):
            try:
                step = _global_step(path)
            except (RecordError, OSError) as e:
                if unreadable is not None:
                    unreadable.append((path, str(e)))
                continue
            if step is not None:
                found.append((step, kind != PREEMPTED, path.name, path))
    return max(found, key=lambda f: f[:3])[3] if found else None


def newest_epoch_files(artifact_dir: str | os.PathLike[str] | RemotePath, extension: str,
                       kinds: Sequence[str]) -> int | None:
    """The highest epoch N with every `<kind>-N.<extension>` of `kinds` in `<artifact_dir>/checkpoint`
    (a custom learning strategy's checkpoints: model, optim, scheduler), else None."""
    folder = as_path(artifact_dir) / "checkpoint"
    if not folder.is_dir():
        return None
    names = {path.name for path in folder.iterdir()}
    epochs = {epoch_of(name, kinds[0], extension) for name in names} - {None}
    complete = [n for n in epochs if n is not None and all(f"{k}-{n}.{extension}" in names for k in kinds)]
    return max(complete, default=None)


def _global_step(path: AnyPath) -> int | None:
    """A training checkpoint's `global_step`, None for a record that is not one (a module record)."""
    if path.is_dir():  # a sharded checkpoint: a folder of shards and its training state
        step = read_training_state(path).get("global_step") if is_sharded_checkpoint(path) else None
        return step if isinstance(step, int) else None
    with registry.sniff(path).scan(path) as (_, item):
        step = item.get("global_step") if is_checkpoint(item) else None
    return step if isinstance(step, int) else None


def store_of(pl_module: L.LightningModule) -> MetricStore:
    """The run's metric store: Burn's strategies need the module that fills it."""
    if not isinstance(pl_module, StepModule):
        raise TypeError(f"Burn's checkpointing and early-stopping callbacks need a burnlike StepModule, "
                        f"got {type(pl_module).__name__}")
    return pl_module.store


def store_model(pl_module: L.LightningModule) -> nn.Module:
    """The Burn model inside the run's StepModule (what model-N records)."""
    store_of(pl_module)
    return cast(StepModule, pl_module).model


def _fast_dev_run(trainer: L.Trainer) -> bool:
    """Lightning's wiring check (`fast_dev_run`): no checkpoints, no early stopping."""
    return bool(getattr(trainer, "fast_dev_run", False))  # set by a connector, not declared on Trainer


class FileCheckpointer(Checkpoint):
    """Applies a Burn checkpointing strategy after each epoch (train + valid), like Burn's loop.

    A `Checkpoint` subclass, so Lightning runs it after the module's own epoch-end hook (the train
    values are in the store by then) and keeps the strategy's state inside each checkpoint (the
    store's own state travels with the module's).

    Args:
        artifact_dir: The run dir (its `checkpoint/` folder holds the files).
        recorder: The files' format (or its file extension, as in earlier versions).
        strategy: Which epochs to save and delete.

    Attributes:
        artifact_dir: The run dir.
        recorder: The files' format.
        extension: The files' extension.
        strategy: Which epochs to save and delete.
        epoch_saved: Called with the epoch once its checkpoint is on disk.

    Raises:
        ValueError: No recorder writes `recorder` as an extension.
    """

    def __init__(self, artifact_dir: str | os.PathLike[str] | RemotePath, recorder: Recorder | str,
                 strategy: CheckpointingStrategy) -> None:
        self.artifact_dir = as_path(artifact_dir)
        if isinstance(recorder, str):  # an extension, as before recorders were passed
            found = registry.by_extension(f"model.{recorder}")
            if found is None:
                raise ValueError(f"FileCheckpointer: no recorder writes .{recorder} files")
            recorder = found
        self.recorder = recorder
        self.extension = recorder.file_extension()
        self.strategy = strategy
        self._saving: int | None = None  # the epoch whose files the current save splits out
        self._skeleton: nn.Module | None = None  # the model's structure, on the meta device (sharded runs)
        self.epoch_saved: list[Callable[[int], None]] = []

    def path(self, epoch: int, kind: str = "model") -> AnyPath:
        """The file of `kind` for `epoch`.

        Args:
            epoch: The epoch, from 1.
            kind: "model", "optim", "scheduler" or "trainer".
        """
        return checkpoint_path(self.artifact_dir, epoch, self.extension, kind)

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """A run starts or resumes: remove temp files a killed save left (their writer is gone).
        Under a sharded strategy, keep the model's structure (no weights) before it is sharded:
        model-N is written from it with the weights gathered from every rank.

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
            stage: Lightning's stage.
        """
        if trainer.is_global_zero:
            parent = self.path(0).parent
            if isinstance(parent, Path):  # an object store has no temp files
                remove_stale_temps(parent)
        if isinstance(getattr(trainer, "strategy", None), CompactShards) and self._skeleton is None:
            self._skeleton = model_skeleton(store_model(pl_module))

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Apply the strategy's actions for the epoch just finished.

        Args:
            trainer: The Trainer.
            pl_module: The `StepModule` being fitted.
        """
        if trainer.sanity_checking or _fast_dev_run(trainer):
            return
        epoch = trainer.current_epoch + 1
        saved = False
        for action in self.strategy.checkpointing(epoch, store_of(pl_module)):
            if isinstance(action, Save):
                self.save(trainer, epoch)
                saved = True
            elif isinstance(action, Delete) and trainer.is_global_zero:
                self.delete(trainer, action.epoch)
        if saved and trainer.is_global_zero:
            self.delete_preempted(trainer, trainer.global_step)
        for listener in self.epoch_saved:
            listener(epoch)

    def save(self, trainer: L.Trainer, epoch: int) -> None:
        """model/optim/scheduler-N from `on_save_checkpoint`, then trainer-N through the plugin.

        Args:
            trainer: The Trainer.
            epoch: The epoch to save.
        """
        log.debug("saving checkpoint %s", self.path(epoch))
        self._saving = epoch
        try:
            # the full state (optimizer, loops, callbacks): resuming needs it; saying so spares
            # Lightning's "`weights_only` was not set" notice at every save
            trainer.save_checkpoint(str(self.path(epoch, "trainer")), weights_only=False)
        finally:
            self._saving = None

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        """During an epoch's save: the model, optimizer and scheduler go to their own files, out of
        Lightning's dict (a sharded run writes model-N from the gathered weights).

        Args:
            trainer: The Trainer.
            pl_module: The `StepModule` being fitted.
            checkpoint: Lightning's checkpoint dict.
        """
        if self._saving is None:
            return
        if self._skeleton is not None:  # sharded: trainer-N keeps the whole state; model-N is Burn's record
            weights = full_model_state(trainer, pl_module)  # every rank: a gather
            if trainer.is_global_zero:
                self.recorder.save_module(whole_model(self._skeleton, weights), self.path(self._saving),
                                          exact_path=True, durable=True)
            return
        save_parts(checkpoint, store_model(pl_module), self.path(self._saving).parent, self._saving,
                   self.recorder, write=trainer.is_global_zero, optimizers=trainer.optimizers)

    def delete(self, trainer: L.Trainer, epoch: int) -> None:
        """Every file of `epoch` (trainer-N first: an epoch without it is incomplete, never resumed).

        Args:
            trainer: The Trainer (its strategy removes the files).
            epoch: The epoch to delete.
        """
        for kind in reversed(KINDS):
            path = self.path(epoch, kind)
            if path.exists():
                log.debug("removing checkpoint %s", path)
                trainer.strategy.remove_checkpoint(str(path))

    def delete_preempted(self, trainer: L.Trainer, step: int) -> None:
        """`preempted-S` files with S <= `step`: a complete epoch checkpoint at `step` supersedes
        them (a resume would never pick them again), so they don't pile up run after run.

        Args:
            trainer: The Trainer (its strategy removes the files).
            step: The global step of the epoch checkpoint just saved.
        """
        folder = self.path(0).parent
        if not folder.is_dir():
            return
        for path in folder.iterdir():
            number = epoch_of(path.name, PREEMPTED, self.extension)
            if number is not None and number <= step:
                log.debug("removing %s: the checkpoint of step %d supersedes it", path, step)
                trainer.strategy.remove_checkpoint(str(path))

    def state_dict(self) -> dict[str, Any]:
        """The strategy's state, for Lightning's checkpoint."""
        return {"strategy": self.strategy.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the strategy's state.

        Args:
            state_dict: What `state_dict` returned.
        """
        if state_dict.get("strategy"):
            self.strategy.load_state_dict(state_dict["strategy"])


@dataclass(frozen=True)
class StoppingCondition:
    """Burn's `StoppingCondition::NoImprovementSince { n_epochs }`:
    `StoppingCondition.NoImprovementSince(n_epochs=1)` (`no_improvement_since(n)` too)."""

    n_epochs: int  # epochs without a strict improvement before stopping

    @classmethod
    def NoImprovementSince(cls, n_epochs: int) -> StoppingCondition:  # noqa: N802 - Burn's variant name
        """Stop after `n_epochs` epochs without improvement.

        Args:
            n_epochs: The epochs, >= 1.
        """
        return cls(n_epochs)

    no_improvement_since = NoImprovementSince
    """`NoImprovementSince`, snake_case."""


class MetricEarlyStoppingStrategy:
    """Burn's: stop once `metric` in `split` has not strictly improved for `n_epochs` epochs.

    A missing value (the split didn't run that epoch) never stops; a NaN never improves, so NaN
    epochs count towards `n_epochs` and stop the run as Burn's do (burn-train learner/early_stopping.rs:
    `NaN < best` is false).

    Args:
        metric: The metric, or its name.
        aggregate: How the epoch's steps make one value.
        direction: Which way is better (None: the metric's own `higher_is_better`).
        split: The split whose values count.
        condition: When to stop (`StoppingCondition.NoImprovementSince(n_epochs)`).

    Attributes:
        best_epoch: The epoch of the best value so far (1 before any).
        best_value: The best value so far (None: none yet).
        warmup_epochs: Epochs at the start that never stop the run (None: none).

    Raises:
        ValueError: `condition.n_epochs` < 1, or no direction for the metric.
    """

    def __init__(self, metric: Metric | str, aggregate: Aggregate = Aggregate.MEAN, direction: Direction | None = None,
                 split: Split = Split.VALID, condition: StoppingCondition = StoppingCondition(1)) -> None:
        positive_int(condition.n_epochs, "StoppingCondition n_epochs")
        self.name, self.direction = _watched(metric, direction)
        self.aggregate, self.split, self.condition = Aggregate(aggregate), Split(split), condition
        self.best_epoch = 1
        self.best_value: float | None = None
        self.warmup_epochs: int | None = None

    def with_warmup_epochs(self, warmup: int | None) -> MetricEarlyStoppingStrategy:
        """Burn 0.20: never stop in the first `warmup` epochs (they still count towards no-improvement).

        Args:
            warmup: The epochs (None: none).

        Raises:
            ValueError: Not None or an integer >= 0.
        """
        if warmup is not None and (not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0):
            raise ValueError(f"with_warmup_epochs: expected None or an integer >= 0, got {warmup!r}")
        self.warmup_epochs = warmup
        return self

    def should_stop(self, epoch: int, store: MetricStore) -> bool:
        """Whether to stop after `epoch` (updates the best value first).

        Args:
            epoch: The epoch just finished.
            store: The run's metric store.
        """
        value = store.find_metric(self.name, epoch, self.split, self.aggregate)
        if value is None:
            log.warning("early stopping: no %s/%s value for epoch %d", self.split.value, self.name, epoch)
            return False
        if store.resolve(self.name, self.direction).improves(value, self.best_value):
            self.best_epoch, self.best_value = epoch, value
            return False
        if self.warmup_epochs is not None and epoch <= self.warmup_epochs:
            return False
        stop = epoch - self.best_epoch >= self.condition.n_epochs
        if stop:
            log.info("stopping: %s/%s has not improved since epoch %d (%s), now %s", self.split.value, self.name,
                     self.best_epoch, self.best_value, value)
        return stop

    def state_dict(self) -> dict[str, Any]:
        """The best epoch and value, which a resume needs."""
        return {"best_epoch": self.best_epoch, "best_value": self.best_value}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned.

        Args:
            state: The saved state.
        """
        self.best_epoch, self.best_value = int(state["best_epoch"]), state["best_value"]

    def to_callback(self) -> MetricEarlyStopping:
        """This strategy as a Lightning callback."""
        return MetricEarlyStopping(self)


class MetricEarlyStopping(DecidingEarlyStopping):
    """Runs a `MetricEarlyStoppingStrategy` on the module's metric store after each epoch.

    A Lightning `EarlyStopping` for its place in the loop (Lightning runs it after the module's
    epoch-end hook, so the train values are stored; `trainer.early_stopping_callback` finds it) and
    its DDP handling (any rank's stop stops all). The decision is Burn's, not Lightning's: epochs
    since the best rather than checks; a NaN never improves (so it stops, as Burn's does), a missing
    value never stops. Lightning's own fields
    (mode, patience, best_score) stay unused.

    Args:
        strategy: The Burn strategy that decides.

    Attributes:
        strategy: The Burn strategy that decides.
    """

    def __init__(self, strategy: MetricEarlyStoppingStrategy) -> None:
        super().__init__(monitor=f"{strategy.split.value}/{strategy.name}", strict=False, check_finite=False,
                         check_on_train_epoch_end=True)
        self.strategy = strategy

    @property
    def state_key(self) -> str:
        """The key of its state in Lightning's checkpoint (apart from Lightning's own EarlyStopping's)."""
        return state_key(self, monitor=self.monitor, strategy="burn")

    def decide(self, trainer: L.Trainer) -> None:
        """Ask the strategy whether to stop after this epoch; any rank's yes stops every rank.

        Args:
            trainer: The Trainer of the fit.
        """
        if _fast_dev_run(trainer):
            return
        stop = self.strategy.should_stop(trainer.current_epoch + 1, store_of(trainer.lightning_module))
        stop = trainer.strategy.reduce_boolean_decision(stop, all=False)
        trainer.should_stop = trainer.should_stop or stop
        if stop:
            self.stopped_epoch = trainer.current_epoch

    def state_dict(self) -> dict[str, Any]:
        """The strategy's state and the epoch it stopped at, for Lightning's checkpoint."""
        return {"strategy": self.strategy.state_dict(), "stopped_epoch": self.stopped_epoch}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict` returned.

        Args:
            state_dict: The saved state.
        """
        self.strategy.load_state_dict(state_dict["strategy"])
        self.stopped_epoch = state_dict["stopped_epoch"]
