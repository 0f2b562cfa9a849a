"""Burn's terminal dashboard, in rich: progress, ETA, throughput and per-split metric plots.

Redrawn by time (`refresh` seconds), not per step: the running means cost a host sync each, so a
fast loop pays them a couple of times a second at most. Epochs count from 1.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ProgressBar
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from burnlike.train.metric.store import Split
from burnlike.train.module import StepModule
from burnlike.train.progress import Pace, running_metrics

BARS = "▁▂▃▄▅▆▇█"
SPLITS = ("train", "valid")


def sparkline(values: list[float], width: int = 40) -> str:
    """The last `width` values as block characters scaled between their min and max."""
    values = [v for v in values if not math.isnan(v)][-width:]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    return "".join(BARS[min(len(BARS) - 1, int((v - lo) / span * (len(BARS) - 1) + 0.5))] for v in values)


class LiveView(ProgressBar):
    """A rich live panel: `Epoch 2/10 · train 120/469 · 2,310 it/s · ETA 0:00:05`, then per metric its
    running value and an epoch plot per split."""

    def __init__(self, refresh: float = 0.5, console: Console | None = None) -> None:
        super().__init__()
        self.refresh = refresh
        self.console = console or Console()
        self._live: Live | None = None
        self._enabled = True
        self.paces = {split: Pace() for split in SPLITS}
        self.split = "train"  # the pass under way
        self._running: dict[str, dict[str, str]] = {s: {} for s in SPLITS}
        self._moved: list[tuple[logging.StreamHandler[Any], Any]] = []  # handlers writing above the panel

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    # Hooks -------------------------------------------------------------------------------------
    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._enabled and trainer.is_global_zero:
            streams = (sys.stdout, sys.stderr)
            self._live = Live(console=self.console, auto_refresh=False, transient=False)
            self._live.start()  # prints go above the panel from here (rich swaps sys.stdout/stderr)
            self._moved = _log_above(streams)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._live is not None:
            self._draw(trainer, pl_module, force=True)
            self._stop()

    def on_exception(self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException) -> None:
        if self._live is not None:
            self._stop()

    def _stop(self) -> None:
        for handler, stream in self._moved:
            handler.setStream(stream)
        self._moved = []
        if self._live is not None:
            self._live.stop()
            self._live = None

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.split = "train"
        self.paces["train"].begin("train", self.total_train_batches)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if not self.paces["train"].started:  # an epoch resumed mid-way: no epoch start
            self.paces["train"].begin("train", self.total_train_batches, done=batch_idx)
        self.paces["train"].step(batch_idx)
        self._draw(trainer, pl_module, force=False)

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            self.split = "valid"
            self.paces["valid"].begin("valid", self.total_val_batches)

    def on_validation_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        if not trainer.sanity_checking:
            self.paces["valid"].step(batch_idx)
            self._draw(trainer, pl_module, force=False)

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        self._draw(trainer, pl_module, force=True)
        self.split = "train"  # validation inside a train epoch: back to it

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._draw(trainer, pl_module, force=True)
        self.paces["train"].end()

    # Drawing -----------------------------------------------------------------------------------
    @property
    def pace(self) -> Pace:
        """The pass under way."""
        return self.paces[self.split]


    def _draw(self, trainer: L.Trainer, pl_module: L.LightningModule, force: bool) -> None:
        if self._live is None:
            return
        now = time.monotonic()
        if not force and now - self.pace.last < self.refresh:
            return
        self.pace.last = now
        split = self.split
        # after an epoch's reset, keep showing its last values
        self._running[split] = running_metrics(pl_module, split) or self._running[split]
        self._live.update(self.render(trainer, pl_module, now), refresh=True)

    def render(self, trainer: L.Trainer, pl_module: L.LightningModule, now: float) -> Panel:
        pace = self.pace
        speed = pace.rate(now)
        limit = trainer.max_epochs  # None or -1: no epoch limit (a max_steps run)
        if limit is not None and limit < 0:
            limit = None
        epoch = trainer.current_epoch + 1 if limit is None else min(trainer.current_epoch + 1, limit)  # done: the last
        parts = [f"Epoch {epoch}" if limit is None else f"Epoch {epoch}/{limit}",
                 f"{pace.split} {pace.done:,}/{int(pace.total):,}" if pace.known else f"{pace.split} {pace.done:,}",
                 f"{speed:,.1f} it/s"]
        if pace.known and speed > 0:
            parts.append(f"ETA {_duration(max(0.0, (pace.total - pace.done) / speed))}")
        header = Text(" · ".join(parts), style="bold")
        table = Table(expand=True, show_edge=False, pad_edge=False)
        table.add_column("Metric")
        for split in SPLITS:
            table.add_column(split.capitalize())
            table.add_column(f"{split} per epoch")
        if isinstance(pl_module, StepModule):
            names = sorted({m.name for s in SPLITS for m in pl_module.metrics(s) if m.numeric})
            for name in names:
                cells = [name]
                for split in SPLITS:
                    epochs = pl_module.store.epochs(Split(split), name)
                    cells.append(self._running[split].get(name, ""))
                    cells.append(sparkline(list(epochs.values())))
                table.add_row(*cells)
        return Panel(Group(header, table), title="burnlike", border_style="dim")


def _log_above(streams: tuple[Any, ...]) -> list[tuple[logging.StreamHandler[Any], Any]]:
    """Point the logging handlers that write to the terminal (`streams`: stdout and stderr as they
    were before the live view) at rich's stand-ins, so their lines go above the panel instead of
    into its redraws. Returns (handler, its stream) to put back."""
    moved = []
    loggers = [logging.getLogger(), *(lg for lg in logging.root.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if type(handler) is logging.StreamHandler and handler.stream in streams:
                stand_in = sys.stdout if handler.stream is streams[0] else sys.stderr
                if stand_in is not handler.stream:
                    moved.append((handler, handler.setStream(stand_in)))
    return moved


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
