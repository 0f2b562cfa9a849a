"""`Learner.fit(train, valid) -> TrainingResult`: a configured Trainer plus Burn's artifacts."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import lightning as L
from lightning.pytorch.strategies import Strategy
from torch import nn

from burnlike._lightning import (
    MultiProcessingLauncher,
    RankWrappingLauncher,
    interrupt_and_tear_down,
    replace_launcher,
    start_method,
)
from burnlike.data.dataloader import epochs_of
from burnlike.record.checkpoint.lightning_dict import is_checkpoint
from burnlike.record.checkpoint.protocol import EpochCheckpoint
from burnlike.record.checkpoint.shard_folder import is_sharded_checkpoint, read_training_state
from burnlike.record.format import registry
from burnlike.record.format.location import AnyPath
from burnlike.train import components
from burnlike.train.checkpoint import checkpoint_path, newest_checkpoint
from burnlike.train.epoch_logs import EpochLogWriter
from burnlike.train.logger import (
    ApplicationLogger,
    install_application_logger,
    remove_experiment_log,
)
from burnlike.train.module import StepModule
from burnlike.train.plot import plot_metrics
from burnlike.train.preemption import SIGNALS, Preempted, SkipFirst
from burnlike.train.process_group import Peers, RankStopped, end_at_exit, is_collective_failure
from burnlike.train.quiet import resuming_exactly
from burnlike.train.renderer.cli import CliMetricsRenderer
from burnlike.train.sharded import CompactShards, full_model_state, model_skeleton, whole_model
from burnlike.train.summary import LearnerSummary
from burnlike.train.tracking import continue_logger_runs

log = logging.getLogger("burnlike.train")


@dataclass
class TrainingResult:
    """`model` is the trained model in eval mode (Burn returns the inner, non-autodiff module); after
    a sharded fit, the whole model on the CPU on rank 0 (the other ranks keep their shards).
    `renderer` (Burn's field): the metrics renderer given to the builder, else Burn's default
    `CliMetricsRenderer`, which `EvaluatorBuilder(dir).renderer(...)` takes (it prints each test step,
    as Burn's does; leave `.renderer(...)` out to keep the progress display)."""

    model: nn.Module  # the trained model, in eval mode
    summary: LearnerSummary | None = None  # the metrics' summary, when the builder asked for one
    trainer: L.Trainer | None = field(default=None, repr=False)  # the Lightning Trainer that ran the fit
    renderer: Any = field(default=None, repr=False)  # the metrics renderer, for an evaluator to take over

    def __post_init__(self) -> None:
        if self.renderer is None:  # Burn: `default_renderer`, the CLI renderer off a terminal (renderer/mod.rs)
            self.renderer = CliMetricsRenderer()


@dataclass
class LearningResult(TrainingResult):
    """Burn 0.20's name for the result: `model` (eval mode), `summary`, the `trainer` (None after a
    custom learning strategy's loop) and the `renderer`."""


class CheckpointMoveError(ValueError):
    """A checkpoint the fit's strategy can't load (the message names both and what works)."""


class Learner(components.Learner):
    """The learning components bound to a configured Trainer (what `LearnerBuilder.build` returns)."""

    def __init__(
        self,
        trainer: L.Trainer,
        module: StepModule,
        artifact_dir: AnyPath,
        numeric: dict[str, list[str]],
        summary: bool = False,
        checkpoint: int | str | None = None,
        checkpoint_extension: str | None = None,
        application_logger: ApplicationLogger = True,
        renderer: Any = None,
        epoch_batches: int | None = None,
    ) -> None:
        super().__init__(module.model, module.optim, module.lr_or_scheduler)
        self.trainer = trainer
        self.module = module
        self.artifact_dir = artifact_dir
        self.numeric = numeric
        self.show_summary = summary
        self.checkpoint = checkpoint
        self.checkpoint_extension = checkpoint_extension
        self.application_logger = application_logger
        self.renderer = renderer
        self.epoch_batches = epoch_batches  # valid_every/num_iterations: an epoch is this many batches
        self._skeleton: nn.Module | None = None  # the model's structure before a sharded fit
        spawned_ranks_tear_down(trainer)
        module.store.add_listener(EpochLogWriter(artifact_dir, GlobalZero(trainer)))

    def model(self) -> nn.Module:
        return self.module.model

    def _check_move(self, path: AnyPath) -> None:
        """A checkpoint moves between strategies and process counts through the recorder: one-file
        and sharded ones alike load under one device, DDP (gathered: the plugin) and the sharding
        strategies (sharded on load). A strategy that reads checkpoints its own way (DeepSpeed,
        Lightning's own FSDP, a custom `load_checkpoint`) never sees the recorder: one line says so."""
        strategy = self.trainer.strategy
        if isinstance(strategy, CompactShards) or type(strategy).load_checkpoint is Strategy.load_checkpoint:
            return
        sharded = is_sharded_checkpoint(path)
        kind = (f"a sharded checkpoint ({sum(1 for p in path.iterdir() if p.name.startswith('shard-'))} shards)"
                if sharded else "a one-file checkpoint")
        gather = f", or gather it into one file first: burnlike consolidate {path} --checkpoint" if sharded else ""
        raise CheckpointMoveError(
            f"{path} is {kind} in the recorder's format, which {type(strategy).__name__} can't load (it reads "
            "checkpoints its own way): resume it on one device, under DDP or sharded (app: trainer=cpu, trainer=ddp "
            f"or trainer=fsdp; in code: ExecutionStrategy.single/ddp, or multi with MultiDeviceOptim.OptimSharded)"
            f"{gather}")

    def _rank_stopped(self, error: Exception) -> None:
        """After a distributed fit failed: a spawned rank that stopped on a signal after saving
        (`Preempted`, its exit status) stops this process the same way; a rank that died (its
        process ended, a collective failed) is named in one line, with the newest checkpoint and
        the resume command, and this rank stops with status 1 (`RankStopped`). Anything else is
        left to propagate."""
        from torch.multiprocessing.spawn import ProcessExitedException

        if isinstance(error, ProcessExitedException):  # this process waits for ranks it spawned
            if error.exit_code in {128 + s for s in SIGNALS}:
                raise Preempted(error.exit_code) from None
            how = f"killed by {error.signal_name}" if error.signal_name else f"exit status {error.exit_code}"
            who = [f"rank {error.error_index} (pid {error.error_pid}, {how})"]
        elif self.trainer.world_size > 1 and is_collective_failure(error):
            peers = next((c for c in self.trainer.callbacks if isinstance(c, Peers)), None)  # type: ignore[attr-defined]
            who = (peers.stopped() if peers is not None else []) or ["another rank"]
        else:
            return
        newest = (newest_checkpoint(self.artifact_dir, self.checkpoint_extension)
                  if self.checkpoint_extension is not None else None)
        saved = f"the newest complete checkpoint is {newest}" if newest is not None else "no checkpoint was saved yet"
        cause = " ".join(str(error).split())[:200]
        line = (f"burnlike: {', '.join(who)} stopped, so rank {self.trainer.global_rank} stops too; {saved}; resume "
                f"with learner.checkpoint=last (in code: checkpoint('last')) [{type(error).__name__}: {cause}]")
        log.error(line)
        print(line, file=sys.stderr, flush=True)
        raise RankStopped(1) from error

    def _resume_loaders(self, ckpt: AnyPath, train: Iterable[Any], valid: Iterable[Any] | None
                        ) -> tuple[Iterable[Any], Iterable[Any] | None]:
        """A train loader that continues where the checkpoint stopped: the epoch's order, past the
        batches already trained. (A `DataLoaderBuilder` valid loader needs nothing: Lightning tells
        its sampler the epoch before each validation.)"""
        epochs, skip = resume_point(ckpt)
        if skip:
            log.info("skipping the %d batches of the epoch the checkpoint already trained", skip)
        if resumes_exactly(train):
            cast(Any, train).resume_at(epochs, skip)
        elif skip and self.trainer.world_size == 1:
            train = SkipFirst(train, skip)  # a plain loader: its first pass skips them (its order is its own)
        return train, valid

    def _epochs_of(self, train: Iterable[Any], batches: int) -> Iterable[Any]:
        if not callable(getattr(train, "set_epoch_batches", None)) and self.trainer.world_size > 1:
            raise ValueError(f"valid_every/num_iterations over {self.trainer.world_size} processes need a "
                             f"DataLoaderBuilder loader (Lightning shards it for each process), got "
                             f"{type(train).__name__}")
        return cast(Iterable[Any], epochs_of(train, batches))

    def resume_path(self, *, warn: bool = True) -> AnyPath | None:
        """The file Lightning resumes from: `trainer-N` (Burn's per-epoch layout), else an older
        single-file `model-N`; for "last" the newest complete checkpoint in the run dir. `warn=False`
        checks without the warnings `fit` gives (skipped files, nothing to resume from yet)."""
        if self.checkpoint is None:
            return None
        if self.checkpoint_extension is None:
            raise ValueError("checkpoint(epoch) needs with_file_checkpointer(recorder): there is nothing to resume from")
        if self.checkpoint == "last":  # a scheduler's requeue runs the same command: resume if there is anything
            unreadable: list[tuple[AnyPath, str]] = []
            newest = newest_checkpoint(self.artifact_dir, self.checkpoint_extension, unreadable)
            for path, why in unreadable if warn else ():
                log.warning("checkpoint('last'): %s can't be read (%s); skipped, resuming from %s", path, why,
                            newest if newest is not None else "the start")
            if newest is None and warn:
                log.warning("checkpoint('last'): no checkpoint in %s yet; training from the start",
                            self.artifact_dir / "checkpoint")
            if newest is not None:
                self._check_move(newest)
            return newest
        epoch = int(self.checkpoint)
        for kind in ("trainer", "model"):
            path = checkpoint_path(self.artifact_dir, epoch, self.checkpoint_extension, kind)
            if path.exists():
                self._check_move(path)
                return path
        raise FileNotFoundError(f"checkpoint({epoch}): no checkpoint file at "
                                f"{checkpoint_path(self.artifact_dir, epoch, self.checkpoint_extension, 'trainer')}")

    def fit(self, train_loader: Iterable[Any], valid_loader: Iterable[Any] | None = None) -> TrainingResult:
        self.artifact_dir.mkdir(parents=True, exist_ok=True)
        # experiment.log is a local file (a logging handler): written for local artifact dirs only;
        # or the user's installer (Burn's with_application_logger(Some(installer)))
        handler = install_application_logger(self.application_logger, self.artifact_dir)
        skeleton = None
        if isinstance(self.trainer.strategy, CompactShards):  # the fit shards the model: keep its structure
            skeleton = self._skeleton = self._skeleton or model_skeleton(self.module.model)
        if self.epoch_batches is not None:
            train_loader = self._epochs_of(train_loader, self.epoch_batches)
        try:
            ckpt = self.resume_path()
            log.info("fitting %s for %s epochs%s", type(self.model()).__name__, self.trainer.max_epochs,
                     f", resuming from {ckpt}" if ckpt else "")
            if ckpt is not None:
                train_loader, valid_loader = self._resume_loaders(ckpt, train_loader, valid_loader)
            if ckpt is not None:
                continue_logger_runs(self.trainer, ckpt)
            if self.trainer.world_size > 1:
                end_at_exit()
            self.module.exact_resume = ckpt is not None and resumes_exactly(train_loader)
            with _spawned_ranks(self.trainer), resuming_exactly(self.module.exact_resume):
                try:
                    self.trainer.fit(self.module, train_loader, valid_loader, ckpt_path=str(ckpt) if ckpt else None)
                except Exception as e:
                    self._rank_stopped(e)
                    raise
            log.info("training finished at epoch %d", self.trainer.current_epoch)
        finally:
            if handler is not None:
                remove_experiment_log(handler)
        summary = None
        if self.show_summary and self.trainer.is_global_zero:
            summary = LearnerSummary.from_store(self.module.store, self.numeric["train"], self.numeric["valid"])
            if self.renderer is None:
                print(summary, flush=True)
            plot_metrics(summary, self.artifact_dir / "metrics.png")
        if self.renderer is not None and self.trainer.is_global_zero:
            end = getattr(self.renderer, "on_train_end", None)
            if callable(end):  # Burn's default prints the summary
                end(summary)
        model = self.module.model
        if skeleton is not None:  # every rank gathers; rank 0 gets the whole model, the others their shards
            weights = full_model_state(self.trainer, self.module)
            if self.trainer.is_global_zero:
                model = whole_model(skeleton, weights)
        model.eval()
        return TrainingResult(model, summary, self.trainer, self.renderer)


class GlobalZero:
    """`trainer.is_global_zero`, asked when called. A class, not a closure: ddp_spawn pickles the
    module, its metric store and the store's listeners into the processes it starts."""

    def __init__(self, trainer: L.Trainer) -> None:
        self.trainer = trainer

    def __call__(self) -> bool:
        return bool(self.trainer.is_global_zero)


def resumes_exactly(loader: Iterable[Any]) -> bool:
    """Whether `loader` starts at any epoch and batch in any process (`DataLoaderBuilder`'s do)."""
    return callable(getattr(loader, "resume_at", None))


def resume_point(path: AnyPath) -> tuple[int, int]:
    """(whole epochs done, batches of the next epoch done) at a checkpoint: an epoch's end saves
    `epoch` = its 0-based index; a mid-epoch one also `EpochCheckpoint.batches_done`."""
    if path.is_dir():  # a sharded checkpoint (ShardedStrategy)
        state = read_training_state(path)
        epoch, done = state.get("epoch"), EpochCheckpoint.from_dict(state).batches_done
    else:
        with registry.sniff(path).scan(path) as (_, item):
            if not is_checkpoint(item):
                return 0, 0
            epoch, done = item.get("epoch"), EpochCheckpoint.from_dict(item).batches_done
    epoch = epoch if isinstance(epoch, int) else 0
    if isinstance(done, int) and done > 0:
        return epoch, done
    return epoch + 1, 0


def spawned_ranks_tear_down(trainer: L.Trainer) -> None:
    """Under ddp_spawn, each rank's process ends as Lightning ends a fit it didn't spawn: on an
    error (a preemption's `Preempted` too) the callbacks hear of it and the trainer is torn down
    (the DDP wrapper released, checkpoint writes finished) before the process exits. Lightning's
    own launcher lets the error leave the rank's fit as it is: the gloo group, still held by the
    DDP wrapper, then now and then aborts the process at interpreter exit ("terminate called
    without an active exception", status -6 instead of the preemption's 143)."""
    strategy = trainer.strategy
    launcher = strategy.launcher
    if type(launcher) is MultiProcessingLauncher:
        replace_launcher(strategy, TearDownSpawnedRanks(strategy, start_method(launcher)))  # type: ignore[arg-type]


class _TornDownOnError:
    """`function` (the rank's `trainer._fit_impl`) run as Lightning's `_call_and_handle_interrupt`
    runs it in a process it didn't spawn. A class, not a closure: it must pickle (forkserver)."""

    def __init__(self, function: Callable[..., Any], trainer: L.Trainer) -> None:
        self.function, self.trainer = function, trainer

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.function(*args, **kwargs)
        except BaseException as e:
            interrupt_and_tear_down(self.trainer, e)
            raise


@dataclass
class SpawnedResult:
    """What rank 0's process sends back besides Lightning's own results: the metric store's state,
    so the summary and the result in the process that called fit hold the epochs. Not frozen:
    Lightning moves the results to the CPU field by field (`move_data_to_device`)."""

    metric_store: dict[str, Any]


class TearDownSpawnedRanks(RankWrappingLauncher):
    """Lightning's ddp_spawn launcher whose ranks end their fit as `_TornDownOnError` does, and
    whose rank 0 sends the metric store back (`SpawnedResult`)."""

    EXTRA = "burnlike"  # SpawnedResult's key in Lightning's extra results

    def get_extra_results(self, trainer: L.Trainer) -> dict[str, Any]:
        extra = super().get_extra_results(trainer)
        module = trainer.lightning_module
        if isinstance(module, StepModule):
            extra[self.EXTRA] = SpawnedResult(module.store.state_dict())
        return extra

    def update_main_process_results(self, trainer: L.Trainer, extra: dict[str, Any]) -> None:
        super().update_main_process_results(trainer, extra)
        result, module = extra.get(self.EXTRA), trainer.lightning_module
        if isinstance(result, SpawnedResult) and isinstance(module, StepModule) and not module.store.epochs_stored():
            module.store.load_state_dict(result.metric_store)

    def wrap_rank(self, function: Callable[..., Any], trainer: L.Trainer) -> Callable[..., Any]:
        return _TornDownOnError(function, trainer)


@contextlib.contextmanager
def _spawned_ranks(trainer: L.Trainer) -> Iterator[None]:
    """The fit of a strategy that starts its ranks as child processes of this one (ddp_spawn),
    which itself only waits for them:
    - a scheduler's SIGTERM/SIGUSR1 to this process is passed on to the ranks (they save a
      checkpoint and stop: `Preemption`), where it would otherwise end this process at once and
      leave them running;
    - tensors go to the ranks through torch's "file_system" sharing: its default "file_descriptor"
      strategy passes one descriptor twice when two tensors share a storage, which spawn refuses
      ("bad value(s) in fds_to_keep")."""
    launcher = getattr(trainer.strategy, "launcher", None)
    if not isinstance(launcher, MultiProcessingLauncher):
        yield
        return
    with contextlib.ExitStack() as stack:
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                previous = signal.signal(signum, lambda signum, frame: launcher.kill(signum))
                stack.callback(signal.signal, signum, previous)
        if start_method(launcher) in ("spawn", "forkserver"):
            import torch.multiprocessing as mp

            stack.callback(mp.set_sharing_strategy, mp.get_sharing_strategy())  # type: ignore[no-untyped-call]
            mp.set_sharing_strategy("file_system")  # type: ignore[no-untyped-call]
        yield
