"""What both progress displays (the plain lines and the live view) show: where a split's pass
stands (`Pace`: the batch shown and the rate) and the metrics' values so far (`running_metrics`).

A pass usually starts at `on_*_epoch_start`; an epoch resumed from a mid-epoch checkpoint never
gets that hook (Lightning only calls it for an epoch it starts), so a display begins the pace at
its first batch instead, at the batch the run stopped at: the position continues (`18/20`) and the
rate counts only the batches trained since the resume.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import lightning as L

from burnlike.train.metric.store import Split
from burnlike.train.module import StepModule


@dataclass
class Pace:
    split: str = "train"
    total: float = 0
    done: int = 0  # batches of this pass done, skipped ones of a resumed epoch included
    first: int = 0  # `done` when the clock started
    start: float = 0.0
    last: float = 0.0  # the last draw
    started: bool = False

    def begin(self, split: str, total: float, done: int = 0) -> None:
        self.split, self.total, self.done, self.first, self.started = split, total, done, done, True
        self.start = self.last = time.monotonic()

    def end(self) -> None:
        self.started = False

    def step(self, batch_idx: int | None = None) -> None:
        """One batch done: `batch_idx` (Lightning's, which continues after a resume) when known."""
        self.done = batch_idx + 1 if batch_idx is not None else self.done + 1

    def rate(self, now: float) -> float:
        return (self.done - self.first) / max(now - self.start, 1e-9)

    @property
    def known(self) -> bool:
        """Whether the pass has a finite length (an iterable dataset may have none)."""
        return isinstance(self.total, int) or (isinstance(self.total, float) and math.isfinite(self.total))


def running_metrics(pl_module: L.LightningModule, split: str) -> dict[str, str]:
    """`{name: "97.12%"}` of the split's numeric metrics this epoch: the running mean (one host
    sync each), or the stored epoch value once the split's epoch is stored (an epoch's train values
    are, as its closing validation starts)."""
    if not isinstance(pl_module, StepModule):
        return {}
    epoch = pl_module.current_epoch + 1
    out = {}
    for m in pl_module.metrics(split):
        if not m.numeric:
            continue
        if m.updated:
            out[m.name] = f"{m.running():.4g}{m.unit}"
        elif (stored := pl_module.store.epochs(Split(split), m.name).get(epoch)) is not None:
            out[m.name] = f"{stored:.4g}{m.unit}"
    return out
