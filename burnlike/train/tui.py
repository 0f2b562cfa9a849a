"""Burn's terminal dashboard, in rich: progress, ETA, throughput and per-split metric plots.

Redrawn by time (`refresh` seconds), not per step: the running means cost a host sync each, so a
fast loop pays them a couple of times a second at most. Epochs count from 1.
"""

from __future__ import annotations

import math
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
        self._split = "train"
        self._start = self._last = 0.0
        self._batches = 0
        self._total: float = 0
        self._running: dict[str, dict[str, str]] = {s: {} for s in SPLITS}

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    # Hooks -------------------------------------------------------------------------------------
    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._enabled and trainer.is_global_zero:
            self._live = Live(console=self.console, auto_refresh=False, transient=False)
            self._live.start()

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._live is not None:
            self._draw(trainer, pl_module, force=True)
            self._live.stop()
            self._live = None

    def on_exception(self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._begin("train", self.total_train_batches)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any) -> None:
        self._step(trainer, pl_module)

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            self._saved = (self._split, self._start, self._last, self._batches, self._total)
            self._begin("valid", self.total_val_batches)

    def on_validation_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any) -> None:
        if not trainer.sanity_checking:
            self._step(trainer, pl_module)

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        self._draw(trainer, pl_module, force=True)
        if hasattr(self, "_saved"):
            self._split, self._start, self._last, self._batches, self._total = self._saved
            del self._saved

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._draw(trainer, pl_module, force=True)

    # Drawing -----------------------------------------------------------------------------------
    def _begin(self, split: str, total: float) -> None:
        self._split, self._total, self._batches = split, total, 0
        self._start = self._last = time.monotonic()

    def _step(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._batches += 1
        self._draw(trainer, pl_module, force=False)

    def _draw(self, trainer: L.Trainer, pl_module: L.LightningModule, force: bool) -> None:
        if self._live is None:
            return
        now = time.monotonic()
        if not force and now - self._last < self.refresh:
            return
        self._last = now
        if isinstance(pl_module, StepModule):  # after an epoch's reset, keep showing its last values
            running = {m.name: f"{m.running():.4g}{m.unit}"
                       for m in pl_module.metrics(self._split) if m.numeric and m.updated}
            self._running[self._split] = running or self._running[self._split]
        self._live.update(self.render(trainer, pl_module, now), refresh=True)

    def render(self, trainer: L.Trainer, pl_module: L.LightningModule, now: float) -> Panel:
        elapsed = max(now - self._start, 1e-9)
        speed = self._batches / elapsed
        known = isinstance(self._total, int) or (isinstance(self._total, float) and math.isfinite(self._total))
        total = trainer.max_epochs if trainer.max_epochs and trainer.max_epochs > 0 else None  # -1: no limit
        epoch = trainer.current_epoch + 1 if total is None else min(trainer.current_epoch + 1, total)  # done: the last
        parts = [f"Epoch {epoch}/{total}" if total is not None else f"Epoch {epoch}",
                 f"{self._split} {self._batches:,}/{int(self._total):,}" if known else f"{self._split} {self._batches:,}",
                 f"{speed:,.1f} it/s"]
        if known and speed > 0:
            parts.append(f"ETA {_duration(max(0.0, (self._total - self._batches) / speed))}")
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


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
