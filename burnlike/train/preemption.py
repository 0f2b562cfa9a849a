"""Cluster preemption: on SIGTERM or SIGUSR1, save a checkpoint at the next step boundary and exit
non-zero with one line, so `learner.checkpoint=last` / `checkpoint("last")` picks up from there.

Why not Lightning's own handling: on SIGTERM Lightning finishes the epoch and exits 0 without
saving; only SLURM's requeue signal saves (`hpc_ckpt_N.ckpt`). Handlers are installed once
Lightning has installed its own (`on_train_start`) and chain to them, so Lightning's SLURM requeue
(`SLURMEnvironment(auto_requeue=True)`: `scontrol requeue` on SIGUSR1) still runs.

A mid-epoch checkpoint also records how many batches of its epoch were trained
(`EpochCheckpoint.batches_done`); the Learner skips that many on resume, so a deterministic loader (no shuffle,
or a seeded sampler) continues exactly where the run stopped.
"""

from __future__ import annotations

import logging
import random
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import FrameType
from typing import Any

import lightning as L
import torch

from burnlike._lightning import is_sigterm_notifier, lower_sigterm_flag
from burnlike.record.checkpoint.protocol import EpochCheckpoint
from burnlike.record.format.location import AnyPath

log = logging.getLogger("burnlike.train")

SIGNALS = (signal.SIGTERM, signal.SIGUSR1) if hasattr(signal, "SIGUSR1") else (signal.SIGTERM,)

Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class Preempted(SystemExit):
    """The run stopped on a signal after saving a checkpoint (exit status 128 + signal number)."""


class Preemption(L.Callback):
    """`path(global_step)`: where the mid-epoch checkpoint goes (through `trainer.save_checkpoint`)."""

    def __init__(self, path: Callable[[int], AnyPath]) -> None:
        self.path = path
        self.received: int | None = None
        self._previous: dict[int, Handler] = {}
        self._trainer: L.Trainer | None = None

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        self._trainer = trainer
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._notice)

    def _notice(self, signum: int, frame: FrameType | None) -> None:
        """Note the signal and run the handlers that were there, but for Lightning's SIGTERM
        notifier: it broadcasts from rank 0 inside the handler, a collective at whatever point the
        signal interrupted, which pairs with another rank's next collective (DDP's gradient
        all-reduce) and hangs both. What it does besides, forwarding the signal to the ranks it
        launched, is done here. Lightning's SIGTERM flag stays down: its own check would end the run
        with exit status 0 and no checkpoint; the next step's decision below saves instead."""
        self.received = signum
        for handler in _handlers(self._previous.get(signum)):
            if is_sigterm_notifier(handler):
                launcher = getattr(getattr(self._trainer, "strategy", None), "launcher", None)
                if launcher is not None:
                    launcher.kill(signum)
            elif callable(handler):
                handler(signum, frame)
        if signum == signal.SIGTERM:
            lower_sigterm_flag(self._trainer)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if _train_part_done(trainer, batch_idx + 1):
            pass
        elif trainer.world_size == 1 or _loaders_resume_exactly(trainer):
            self._decide(trainer, batch_idx + 1)
        else:  # a plain loader under DDP: Lightning would restart the epoch's order from its first batch
            self._decide(trainer, batch_idx + 1, save=False, when=f"during epoch {trainer.current_epoch + 1}",
                         redo=f"epoch {trainer.current_epoch + 1} is trained again (a DataLoaderBuilder loader "
                              "would continue mid-epoch)")
        # at an epoch's last batch the epoch's end (validation, the epoch's checkpoint) comes first:
        # a checkpoint saved there would make Lightning skip that validation on resume

    def on_validation_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        """A signal during validation stops it at the next batch (a long validation would outlast a
        cluster's grace period). During an epoch's closing validation nothing is saved: Lightning
        can't resume a run between an epoch's last step and its validation, so the resumed run
        trains that epoch again from the checkpoint before it (exactly: same data order, same
        random state). A validation within the epoch (`val_check_interval`) saves the train steps."""
        if trainer.sanity_checking or trainer.state.fn != "fit":
            return
        done = trainer.fit_loop.epoch_loop.batch_progress.current.completed
        if _train_part_done(trainer, done):
            self._decide(trainer, done, save=False, when=f"during epoch {trainer.current_epoch + 1}'s validation",
                         redo=f"epoch {trainer.current_epoch + 1} is trained again")
        else:
            self._decide(trainer, done)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """A signal as the last epoch ended: its checkpoint is saved, resume from there."""
        if trainer.current_epoch > 0:
            self._decide(trainer, 0, save=False, when=f"at the end of epoch {trainer.current_epoch}",
                         redo="nothing is trained again")

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.received is not None and trainer.is_global_zero:
            name = signal.Signals(self.received).name
            log.info("%s arrived as the run ended; it finished, nothing to resume", name)
            print(f"burnlike: {name} arrived as the run ended; it finished (nothing to resume)", file=sys.stderr,
                  flush=True)

    def _decide(self, trainer: L.Trainer, batches_done: int, save: bool = True, when: str = "",
                redo: str = "") -> None:
        """Every rank calls this at the same points, so the decision is one collective each time."""
        if not trainer.strategy.reduce_boolean_decision(self.received is not None, all=False):
            return
        name = signal.Signals(self.received).name if self.received is not None else "a signal on another rank"
        if save:
            path = self.path(trainer.global_step)
            self._batches_done = batches_done
            try:
                trainer.save_checkpoint(str(path), weights_only=False)  # the whole state: a resume needs it
            finally:
                self._batches_done = None
            line = (f"burnlike: preempted by {name} at epoch {trainer.current_epoch + 1}, step {trainer.global_step}; "
                    f"checkpoint saved to {path}; resume with checkpoint('last') (app: learner.checkpoint=last)")
        else:
            line = (f"burnlike: preempted by {name} {when}; resume with checkpoint('last') (app: "
                    f"learner.checkpoint=last) from the newest checkpoint: {redo}")
        log.info(line)  # experiment.log / train.log; the console gets it once, below
        if trainer.is_global_zero:
            print(line, file=sys.stderr, flush=True)
        raise Preempted(128 + (self.received or signal.SIGTERM))

    _batches_done: int | None = None

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        EpochCheckpoint(batches_done=self._batches_done).add_to(checkpoint)

    def teardown(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        self._trainer = None
        for signum, previous in self._previous.items():
            if previous is not None and signal.getsignal(signum) == self._notice:
                signal.signal(signum, previous)
        self._previous.clear()


def _loaders_resume_exactly(trainer: L.Trainer) -> bool:
    """Whether every train loader can start at a batch in every process (`resume_at`)."""
    loaders = trainer.train_dataloader
    if isinstance(loaders, Mapping):
        loaders = list(loaders.values())
    elif not isinstance(loaders, (list, tuple)):
        loaders = [loaders]
    return all(callable(getattr(loader, "resume_at", None)) for loader in loaders)


def _train_part_done(trainer: L.Trainer, batches_done: int) -> bool:
    """Whether the epoch's train batches are all done (its closing validation comes next)."""
    progress = trainer.fit_loop.epoch_loop.batch_progress
    return bool(progress.is_last_batch) or batches_done >= trainer.num_training_batches


def _handlers(handler: Handler) -> list[Handler]:
    """The handlers one installed handler stands for (Lightning composes several into one)."""
    composed = getattr(handler, "signal_handlers", None)
    return list(composed) if isinstance(composed, list) else [handler]


class RandomState(L.Callback):
    """Keeps the random generators' states (torch, CUDA, Python, NumPy) in every checkpoint and
    restores them on resume: dropout after a resume draws what it would have drawn (Lightning
    saves none of them). After an epoch's end they are restored at once (the next epoch's loader
    draws from them, as in the uninterrupted run); after a mid-epoch save, just before the next
    step, past the draws Lightning's restart makes (a fresh loader iterator), or after the
    validation a save during validation makes the resumed run repeat."""

    def __init__(self) -> None:
        self._pending: dict[str, Any] | None = None

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
        if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            state["cuda"] = torch.cuda.get_rng_state_all()
        try:
            import numpy as np

            state["numpy"] = np.random.get_state()
        except ImportError:  # pragma: no cover - numpy comes with torch's usual installs
            pass
        EpochCheckpoint(rng_state=state).add_to(checkpoint)

    def on_load_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        saved = EpochCheckpoint.from_dict(checkpoint)
        state = saved.rng_state
        if state is None:
            return
        if saved.batches_done:
            self._pending = state
        else:
            restore_random_state(state)

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        self._restore_pending()

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Saved during a validation, the resumed run validates again first: the state goes back
        after that (a shuffled validation loader draws when it starts), before the next epoch's
        loader draws its order, as in the uninterrupted run."""
        if not trainer.sanity_checking:
            self._restore_pending()

    def _restore_pending(self) -> None:
        if self._pending is not None:
            restore_random_state(self._pending)
            self._pending = None


def restore_random_state(state: dict[str, Any]) -> None:
    if "torch" in state:
        torch.set_rng_state(state["torch"])
    if "python" in state:
        version, internal, gauss = state["python"]
        random.setstate((version, tuple(internal), gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(list(state["cuda"]))
    if "numpy" in state:
        import numpy as np

        np.random.set_state(tuple(state["numpy"]))


class SkipFirst:
    """The train loader whose first pass skips the batches a mid-epoch checkpoint already trained
    (Lightning restarts a non-resumable loader from its first batch). Later passes are whole."""

    def __init__(self, loader: Iterable[Any], skip: int) -> None:
        self.loader, self.skip = loader, skip

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        skip, self.skip = self.skip, 0
        for i, batch in enumerate(self.loader):
            if i >= skip:
                yield batch
