"""Burn's `metric/store`: the run's one record of epoch values, and each metric's direction.

`StepModule` ends each split's epoch with `MetricStore.end_epoch`: the store keeps every metric's
epoch value (the count-weighted mean, synced across ranks) and hands the epoch to its listeners
(Burn's `.log` files, the app's result.json). The checkpointing and early-stopping strategies, the
end-of-training summary and the app read their values here; nothing re-reads files the run wrote.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from burnlike.train.metric.base import Metric


class Split(str, Enum):
    """Burn's `Split::{Train, Valid, Test}` (a tagged test split logs under test/<tag>/: the evaluator);
    the UPPERCASE names are aliases."""

    Train = "train"
    Valid = "valid"
    Test = "test"
    TRAIN = "train"
    VALID = "valid"
    TEST = "test"


class Direction(str, Enum):
    """Burn's `Direction::{Lowest, Highest}`: which way is better; values are Lightning's `mode`
    names; the UPPERCASE names are aliases."""

    Lowest = "min"
    Highest = "max"
    LOWEST = "min"
    HIGHEST = "max"

    @classmethod
    def of(cls, higher_is_better: bool | None) -> Direction | None:
        """A metric's direction from its torchmetrics-style `higher_is_better` (None: neither).

        Args:
            higher_is_better: True, False or None.
        """
        if higher_is_better is None:
            return None
        return cls.HIGHEST if higher_is_better else cls.LOWEST

    def improves(self, value: float, best: float | None) -> bool:
        """Strictly better than `best` (Burn's comparison; NaN never improves).

        Args:
            value: The new value.
            best: The best so far; None: anything but NaN improves.
        """
        if math.isnan(value):
            return False
        if best is None:
            return True
        return value < best if self is Direction.LOWEST else value > best


class Aggregate(str, Enum):
    """How steps become an epoch value. Burn has only the mean (count-weighted), which the store
    holds; strategies take the argument to keep Burn's signature and reject anything else."""

    Mean = "mean"
    MEAN = "mean"


@dataclass(frozen=True)
class EpochEntry:
    """One metric's epoch: its value (synced across ranks) and this rank's `(value, count)` steps."""

    value: float  # the epoch's count-weighted mean, synced across ranks
    steps: list[tuple[float, float]] = field(default_factory=list)  # this rank's (value, count) per step


EpochListener = Callable[[Split, int, Mapping[str, EpochEntry]], None]
"""What `MetricStore.add_listener` takes: called with `(split, epoch, entries)` after each epoch."""


class MetricStore:
    """Epoch values per (split, metric name, epoch), plus each metric's direction."""

    def __init__(self) -> None:
        self._values: dict[tuple[Split, str], dict[int, float]] = {}
        self._directions: dict[str, Direction | None] = {}
        self._listeners: list[EpochListener] = []

    # Metrics and listeners ---------------------------------------------------------------------
    def register(self, metrics: Iterable[Metric]) -> None:
        """Declare the metrics of this run (their names and directions).

        Args:
            metrics: The run's metrics.

        Raises:
            ValueError: Two metrics of one name with different directions.
        """
        for m in metrics:
            direction = Direction.of(m.higher_is_better)
            known = self._directions.setdefault(m.name, direction)
            if known is not direction:
                raise ValueError(f"metric {m.name!r} is registered with two directions "
                                 f"({_label(known)} and {_label(direction)}); give the metrics distinct names")

    def direction(self, name: str) -> Direction | None:
        """The registered metric's direction (None: it has none, or it isn't registered).

        Args:
            name: The metric's name.
        """
        return self._directions.get(name)

    def add_listener(self, listener: EpochListener) -> None:
        """Call `listener(split, epoch, entries)` after each epoch is stored.

        Args:
            listener: A callable of `(split, epoch, entries)`.
        """
        self._listeners.append(listener)

    # Writing -----------------------------------------------------------------------------------
    def end_epoch(self, split: Split, epoch: int, entries: Mapping[str, EpochEntry]) -> None:
        """Store one split's epoch values, then notify the listeners.

        Args:
            split: `Split.Train`, `Split.Valid` or `Split.Test` (or its value).
            epoch: The epoch's number (from 1).
            entries: Each metric's name and epoch entry.
        """
        split = Split(split)
        for name, entry in entries.items():
            self.record(split, epoch, name, entry.value)
        for listener in self._listeners:
            listener(split, epoch, entries)

    def record(self, split: Split, epoch: int, name: str, value: float) -> None:
        """Store one metric's epoch value (without notifying the listeners).

        Args:
            split: `Split.Train`, `Split.Valid` or `Split.Test` (or its value).
            epoch: The epoch's number.
            name: The metric's name.
            value: Its epoch value.
        """
        self._values.setdefault((Split(split), name), {})[epoch] = float(value)

    # Queries (Burn's `find_metric` / `find_epoch`) ---------------------------------------------
    def epochs(self, split: Split, name: str) -> dict[int, float]:
        """Every stored epoch of `name` in `split`, in epoch order.

        Args:
            split: `Split.Train`, `Split.Valid` or `Split.Test` (or its value).
            name: The metric's name.

        Returns:
            `{epoch: value}`.
        """
        return dict(sorted(self._values.get((Split(split), name), {}).items()))

    def epochs_stored(self) -> bool:
        """Whether any epoch of any split is stored."""
        return any(self._values.values())

    def has_epoch(self, split: Split, epoch: int) -> bool:
        """Whether `epoch` of `split` is stored (for any metric).

        Args:
            split: `Split.Train`, `Split.Valid` or `Split.Test` (or its value).
            epoch: The epoch's number.
        """
        split = Split(split)
        return any(s is split and epoch in values for (s, _), values in self._values.items())

    def names(self, split: Split) -> list[str]:
        """The names of the metrics stored for `split`, sorted.

        Args:
            split: `Split.Train`, `Split.Valid` or `Split.Test` (or its value).
        """
        return sorted(name for s, name in self._values if s is Split(split))

    def find_metric(self, name: str, epoch: int, split: Split, aggregate: Aggregate = Aggregate.MEAN) -> float | None:
        """Burn's `find_metric`: one epoch's value, or None when it isn't stored.

        Args:
            name: The metric's name.
            epoch: The epoch's number.
            split: `Split.Train`, `Split.Valid` or `Split.Test` (or its value).
            aggregate: Burn's argument; only the mean exists.
        """
        Aggregate(aggregate)
        return self._values.get((Split(split), name), {}).get(epoch)

    def find_epoch(self, name: str, split: Split, direction: Direction | None = None,
                   aggregate: Aggregate = Aggregate.MEAN) -> int | None:
        """The best epoch so far: the first to reach the best value (None while nothing is stored).

        Args:
            name: The metric's name.
            split: `Split.Train`, `Split.Valid` or `Split.Test` (or its value).
            direction: Which way is better; None: the metric's own.
            aggregate: Burn's argument; only the mean exists.

        Raises:
            ValueError: `direction` is None and the metric has none.
        """
        Aggregate(aggregate)
        values = self.epochs(split, name)
        if not values:
            return None
        way = self.resolve(name, direction)
        best_epoch, best = None, None
        for epoch, value in values.items():
            if way.improves(value, best):
                best_epoch, best = epoch, value
        return best_epoch

    def resolve(self, name: str, direction: Direction | None) -> Direction:
        """`direction`, else the metric's own; an error names the metric when it has none.

        Args:
            name: The metric's name.
            direction: A direction, or None for the metric's own.
        """
        if direction is not None:
            return Direction(direction)
        own = self._directions.get(name)
        if own is None:
            raise ValueError(f"metric {name!r} has no direction (higher_is_better=None, or not registered): "
                             "pass direction=Direction.Lowest or Direction.Highest")
        return own

    # Checkpoint state --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, dict[str, dict[int, float]]]:
        """`{split: {name: {epoch: value}}}`: what a resumed run needs to know of earlier epochs."""
        out: dict[str, dict[str, dict[int, float]]] = {}
        for (split, name), values in self._values.items():
            out.setdefault(split.value, {})[name] = dict(values)
        return out

    def load_state_dict(self, state: Mapping[str, Mapping[str, Mapping[Any, Any]]]) -> None:
        """Store the epochs a checkpoint's `state_dict()` holds (a resumed run's earlier epochs).

        Args:
            state: `{split: {name: {epoch: value}}}`.
        """
        for split, metrics in state.items():
            for name, values in metrics.items():
                for epoch, value in values.items():
                    self.record(Split(split), int(epoch), name, float(value))


def _label(direction: Direction | None) -> str:
    return "no direction" if direction is None else direction.name.lower()
