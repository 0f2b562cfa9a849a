"""Burn's `Interrupter`: stop a running fit from another thread, a callback or a signal handler.

The flag is checked by a Lightning callback after every training step, so training stops at the
next step boundary (Lightning then finishes the epoch's bookkeeping: checkpoint, logs, summary).
Under DDP every rank asks its peers, so a stop seen by one process stops them all together.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback

log = logging.getLogger("burnlike.train")


class Interrupter:
    """A shared stop flag with an optional reason (`stop(reason)`, `should_stop()`, `reset()`)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._message: str | None = None

    def stop(self, reason: str | None = None) -> None:
        """Ask the learner to stop at the next step; safe from any thread.

        Args:
            reason: What the log line names as the cause (None: keep any earlier reason).
        """
        if reason is not None:
            with self._lock:
                self._message = str(reason)
        self._event.set()

    def reset(self) -> None:
        """Clear the flag, so the interrupter can serve another fit."""
        self._event.clear()

    def should_stop(self) -> bool:
        """Whether a stop was asked for."""
        return self._event.is_set()

    def get_message(self) -> str | None:
        """The reason given to `stop` (None: none)."""
        with self._lock:
            return self._message


class InterrupterCallback(Callback):
    """Turns `interrupter.should_stop()` into `trainer.should_stop` at the next step boundary."""

    def __init__(self, interrupter: Interrupter) -> None:
        self.interrupter = interrupter

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        stop = self.interrupter.should_stop()
        if trainer.world_size > 1:  # one rank's stop must stop every rank at the same step
            stop = trainer.strategy.reduce_boolean_decision(stop, all=False)
        if stop and not trainer.should_stop:
            trainer.should_stop = True
            reason = self.interrupter.get_message()
            if trainer.world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
                # every rank is here (the decision was common): rank 0, which writes the logs, names
                # the reason the asking rank gave
                reasons: list[str | None] = [None] * trainer.world_size
                torch.distributed.all_gather_object(reasons, reason)
                reason = next((r for r in reasons if r), None)
            reason = reason or "Reason unknown"
            log.info("Training interrupted: %s (after step %d)", reason, trainer.global_step)
