"""Where a split's pass stands, for the progress displays: the batch shown and the rate.

A pass usually starts at `on_*_epoch_start`; an epoch resumed from a mid-epoch checkpoint never
gets that hook (Lightning only calls it for an epoch it starts), so a display begins the pace at
its first batch instead, at the batch the run stopped at: the position continues (`18/20`) and the
rate counts only the batches trained since the resume.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass


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
