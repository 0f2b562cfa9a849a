"""Progress display: the live view in a terminal, plain lines anywhere else (files, SLURM, CI).

Both show Burn's running metric means and count epochs from 1, as Burn, the logs, the summary and
the checkpoints do. The running means cost one host sync per refresh, so the bar refreshes every
`refresh_rate` steps and the plain display every `interval` seconds, never per step.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from typing import IO, Any

import lightning as L
from lightning.pytorch.callbacks import ProgressBar, TQDMProgressBar

from burnlike.train.metric.store import EpochEntry, Split
from burnlike.train.module import StepModule
from burnlike.train.progress import Pace, running_metrics


class BurnProgressBar(TQDMProgressBar):
    """Lightning's tqdm bar, with Burn's metric names and `Epoch 1/N` (Lightning's says `Epoch 0`).

    Args:
        refresh_rate: Steps between two redraws (each costs a host sync for the running means).
    """

    def __init__(self, refresh_rate: int = 20) -> None:
        super().__init__(refresh_rate=refresh_rate)

    def on_train_epoch_start(self, trainer: L.Trainer, *args: Any) -> None:
        """The bar's title: `Epoch n/N`, counted from 1.

        Args:
            trainer: The Trainer.
        """
        super().on_train_epoch_start(trainer, *args)
        self.train_progress_bar.set_description(f"Epoch {trainer.current_epoch + 1}/{trainer.max_epochs}")

    def get_metrics(self, trainer: L.Trainer, pl_module: L.LightningModule) -> dict[str, Any]:
        """Lightning's items, without `v_num`, with the split's running metric means under Burn's names.

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
        """
        items = super().get_metrics(trainer, pl_module)
        items.pop("v_num", None)
        split = "valid" if trainer.validating or trainer.sanity_checking else "train"
        items.update(running_metrics(pl_module, split))
        return items


class PlainProgress(ProgressBar):
    """Lines, not redraws: one every `interval` seconds within an epoch and one per split when its
    epoch is stored (`epoch 3/10 train Accuracy=97.12% Loss=0.091 2,310 it/s`): train, then valid,
    with the epoch's values as the store holds them (synced across ranks). No carriage returns, so
    a redirected log reads top to bottom.

    Args:
        interval: Seconds between two lines within an epoch.
        stream: Where the lines go (None: stdout).

    Attributes:
        interval: Seconds between two lines within an epoch.
        stream: Where the lines go (None: stdout).
        paces: The train and valid passes' progress and speed.
        split: The pass under way ("train" or "valid").
    """

    def __init__(self, interval: float = 30.0, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.interval = interval
        self.stream = stream
        self._enabled = True
        self.paces = {"train": Pace(), "valid": Pace()}
        self.split = "train"  # the pass under way
        self._fit_trainer: L.Trainer | None = None
        self._listening: set[int] = set()

    def disable(self) -> None:
        """Stop writing lines (Lightning's switch, e.g. on ranks other than 0)."""
        self._enabled = False

    def enable(self) -> None:
        """Write lines again."""
        self._enabled = True

    def _write(self, text: str) -> None:
        if self._enabled:
            stream = self.stream or sys.stdout
            stream.write(text + "\n")
            stream.flush()

    def _line(self, trainer: L.Trainer, split: str, values: dict[str, str], position: bool) -> str:
        pace = self.paces[split]
        parts = [f"epoch {trainer.current_epoch + 1}/{trainer.max_epochs} {split}"]
        if position:
            parts.append(f"{pace.done:,}/{int(pace.total):,}" if pace.known else f"{pace.done:,}")
        parts += [f"{k}={v}" for k, v in values.items()]
        rate = pace.rate(time.monotonic())
        parts.append(f"{rate:,.0f} it/s" if rate >= 10 else f"{rate:.2f} it/s")
        return " ".join(parts)

    def _step(self, trainer: L.Trainer, pl_module: L.LightningModule, split: str, batch_idx: int) -> None:
        pace = self.paces[split]
        pace.step(batch_idx)
        now = time.monotonic()
        if now - pace.last >= self.interval:
            pace.last = now
            self._write(self._line(trainer, split, running_metrics(pl_module, split), position=True))

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Listen to the module's metric store, whose stored epochs make the per-split lines.

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
            stage: Lightning's stage ("fit", "validate" ...).
        """
        super().setup(trainer, pl_module, stage)
        self._fit_trainer = trainer
        if isinstance(pl_module, StepModule) and id(pl_module) not in self._listening:
            self._listening.add(id(pl_module))
            self._module = pl_module
            pl_module.store.add_listener(self._stored)  # a bound method: ddp_spawn pickles the store

    _module: StepModule | None = None

    def _stored(self, split: Split, epoch: int, entries: Mapping[str, EpochEntry]) -> None:
        """A split's epoch is in the store: its line, with the stored values."""
        name = Split(split).value
        pl_module = self._module
        if self._fit_trainer is None or pl_module is None or name not in self.paces or not self.paces[name].done:
            return
        numeric = {m.name: m.unit for m in pl_module.metrics(name) if m.numeric}
        values = {k: f"{e.value:.4g}{numeric[k]}" for k, e in entries.items() if k in numeric and not math.isnan(e.value)}
        self._write(self._line(self._fit_trainer, name, values, position=False))

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """The train pass starts.

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
        """
        self.split = "train"
        self.paces["train"].begin("train", self.total_train_batches)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        """Count the step; a line when `interval` has passed.

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
            outputs: The step's output.
            batch: The batch.
            batch_idx: Its index in the epoch.
        """
        if not self.paces["train"].started:  # an epoch resumed mid-way: no epoch start
            self.paces["train"].begin("train", self.total_train_batches, done=batch_idx)
        self._step(trainer, pl_module, "train", batch_idx)

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """The valid pass starts (not the sanity check).

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
        """
        if not trainer.sanity_checking:
            self.split = "valid"
            self.paces["valid"].begin("valid", self.total_val_batches)

    def on_validation_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        """Count the step; a line when `interval` has passed.

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
            outputs: The step's output.
            batch: The batch.
            batch_idx: Its index in the epoch.
            dataloader_idx: Which validation loader.
        """
        if not trainer.sanity_checking:
            self._step(trainer, pl_module, "valid", batch_idx)

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Back to the train pass (a validation may run inside a train epoch).

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
        """
        if not trainer.sanity_checking:
            self.split = "train"  # validation inside a train epoch: back to it

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """The train pass ends.

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
        """
        self.paces["train"].end()

    def teardown(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Forget the Trainer: the fit is over.

        Args:
            trainer: The Trainer.
            pl_module: The LightningModule being fitted.
            stage: Lightning's stage ("fit", "validate" ...).
        """
        self._fit_trainer = None


def progress_display(stream: IO[str] | None = None) -> ProgressBar:
    """The live view (`burnlike.train.tui`) when `stream` (stdout by default) is a terminal, plain
    lines otherwise. `BurnProgressBar` stays for those who want a bar: `.callback(BurnProgressBar())`.

    Args:
        stream: Where the display goes (None: stdout).
    """
    from burnlike.train.tui import LiveView

    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    return LiveView() if callable(isatty) and isatty() else PlainProgress()
