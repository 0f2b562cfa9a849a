"""Burn's training events and their processor (burn-train `metric/processor/`): what a custom
learning strategy reports, and what turns the reports into metrics, logs and renders.

`SupervisedTrainingEventProcessor.process_train(LearnerEvent.ProcessedItem(TrainingItem(...)))` feeds
the item to the run's train metrics and the renderer; `LearnerEvent.EndEpoch(epoch)` ends the split's
epoch: the metrics' values go to the metric store, which writes Burn's `train/epoch-N/<Metric>.log`
files through its listeners, as a Lightning fit's do. The same metrics, store and renderer contract
as `StepModule` and `MetricsRendererCallback`: only the loop driving them is the user's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from burnlike.checks import positive_int
from burnlike.data.dataloader import Progress
from burnlike.train.metric.base import Metric, MetricContext, steps_since
from burnlike.train.metric.store import EpochEntry, MetricStore, Split
from burnlike.train.module import check_metrics
from burnlike.train.renderer.base import TrainingProgress
from burnlike.train.renderer.processor import RunningMeans, definition, indicators, takes_indicators
from burnlike.train.summary import LearnerSummary

log = logging.getLogger("burnlike.train")

T = TypeVar("T")

__all__ = ["EventProcessorTraining", "LearnerEvent", "SupervisedTrainingEventProcessor", "TrainingItem"]


@dataclass
class TrainingItem(Generic[T]):
    """Burn's `TrainingItem::new(item, progress, global_progress, iteration, lr)`: a step's output
    (what the metrics read), where the split's pass stands (`Progress` in items, e.g. the
    iterator's `progress()`), the epochs (`Progress(epoch, num_epochs)`), the step within the
    epoch and the learning rate it trained at (None for validation)."""

    item: T  # the step's output, which the metrics read
    progress: Progress  # where the split's pass stands, in items
    global_progress: Progress  # where the training stands, in epochs
    iteration: int | None = None  # the step within the epoch
    lr: float | None = None  # the learning rate the step trained at (None: validation)


@dataclass(frozen=True)
class LearnerEvent:
    """Burn's `LearnerEvent::{Start, ProcessedItem(item), EndEpoch(epoch), End(summary)}`."""

    Start: ClassVar[LearnerEvent]
    """The fit starts: the renderer registers the metrics (Burn's unit variant)."""

    kind: str  # "start", "processed_item", "end_epoch" or "end"
    item: TrainingItem[Any] | None = None  # a ProcessedItem's step output
    epoch: int | None = None  # an EndEpoch's epoch, from 1
    summary: LearnerSummary | None = None  # an End's summary (None: none)

    @classmethod
    def ProcessedItem(cls, item: TrainingItem[Any]) -> LearnerEvent:  # noqa: N802 - Burn's variant name
        """A step is done: its output feeds the metrics and the renderer.

        Args:
            item: The step's output and progress.

        Raises:
            TypeError: `item` is not a `TrainingItem`.
        """
        if not isinstance(item, TrainingItem):
            raise TypeError(f"LearnerEvent.ProcessedItem expects a TrainingItem, got {type(item).__name__}")
        return cls("processed_item", item=item)

    @classmethod
    def EndEpoch(cls, epoch: int) -> LearnerEvent:  # noqa: N802
        """The split's epoch is done: its metrics' values go to the store and the log files.

        Args:
            epoch: The epoch, from 1.

        Raises:
            ValueError: Not an integer >= 1.
        """
        return cls("end_epoch", epoch=positive_int(epoch, "LearnerEvent.EndEpoch's epoch number (from 1)"))

    @classmethod
    def End(cls, summary: LearnerSummary | None = None) -> LearnerEvent:  # noqa: N802
        """The fit is done: the renderer's `on_train_end(summary)`.

        Args:
            summary: The run's summary (None: none).
        """
        return cls("end", summary=summary)


LearnerEvent.Start = LearnerEvent("start")


class EventProcessorTraining:
    """Burn's `EventProcessorTraining` trait: `process_train`, `process_valid` and `renderer()`."""

    def process_train(self, event: LearnerEvent) -> None:
        """Handle an event of the training split.

        Args:
            event: The event.
        """
        raise NotImplementedError

    def process_valid(self, event: LearnerEvent) -> None:
        """Handle an event of the validation split.

        Args:
            event: The event.
        """
        raise NotImplementedError

    def renderer(self) -> Any:
        """The metrics renderer the events reach (None: none)."""
        raise NotImplementedError


class SupervisedTrainingEventProcessor(EventProcessorTraining):
    """The run's metrics (per split), its metric store and its renderer (None: each epoch's values
    go to the `burnlike.train` log only), driven by a custom loop's events. Metrics registered as
    numeric (`numeric[split]`) reach the renderer as `MetricState.Numeric`.

    Args:
        metrics: The metrics per split (`{"train": [...], "valid": [...]}`).
        store: The run's metric store; its listeners write the epoch log files.
        renderer: The metrics renderer (None: the log only).
        numeric: The names registered as numeric, per split (None: none).

    Attributes:
        store: The run's metric store.
    """

    def __init__(self, metrics: Mapping[str, Sequence[Metric]], store: MetricStore, renderer: Any = None,
                 numeric: Mapping[str, Sequence[str]] | None = None) -> None:
        self._metrics = {split: list(metrics.get(split, ())) for split in ("train", "valid")}
        self.store = store
        self._renderer = renderer
        self._numeric = {split: set((numeric or {}).get(split, ())) for split in ("train", "valid")}
        self._checked: set[str] = set()
        self._running = RunningMeans()  # by (split, metric)
        self._started = False

    def metrics(self, split: str) -> list[Metric]:
        """The split's metrics.

        Args:
            split: "train" or "valid".
        """
        return self._metrics[split]

    def numeric_names(self, split: str) -> list[str]:
        """The split's metrics registered as numeric (the summary's rows).

        Args:
            split: "train" or "valid".
        """
        return [m.name for m in self._metrics[split] if m.name in self._numeric[split]]

    def renderer(self) -> Any:
        """The metrics renderer (None: none)."""
        return self._renderer

    def process_train(self, event: LearnerEvent) -> None:
        """Handle an event of the training split.

        Args:
            event: The event.

        Raises:
            TypeError: `event` is not a `LearnerEvent`.
        """
        self._process("train", event)

    def process_valid(self, event: LearnerEvent) -> None:
        """Handle an event of the validation split.

        Args:
            event: The event.

        Raises:
            TypeError: `event` is not a `LearnerEvent`.
        """
        self._process("valid", event)

    def _process(self, split: str, event: LearnerEvent) -> None:
        if not isinstance(event, LearnerEvent):
            raise TypeError(f"process_{split} expects a LearnerEvent (e.g. LearnerEvent.ProcessedItem(item)), "
                            f"got {type(event).__name__}")
        if event.kind == "start":
            self._start()
        elif event.kind == "processed_item":
            assert event.item is not None
            self._item(split, event.item)
        elif event.kind == "end_epoch":
            assert event.epoch is not None
            self._end_epoch(split, event.epoch)
        elif event.kind == "end":
            end = getattr(self._renderer, "on_train_end", None)
            if callable(end):
                end(event.summary)

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        register = getattr(self._renderer, "register_metric", None)
        if callable(register):
            seen: set[str] = set()
            for split in ("train", "valid"):
                for m in self._metrics[split]:
                    if m.name not in seen:
                        seen.add(m.name)
                        register(definition(m))

    def _item(self, split: str, item: TrainingItem[Any]) -> None:
        metrics = self._metrics[split]
        if split not in self._checked:
            check_metrics(type(item.item), metrics, split)
            self._checked.add(split)
        starts = [m.num_steps for m in metrics]
        ctx = MetricContext(lr=item.lr, iteration=item.iteration or 0)
        for m in metrics:
            m.update(item.item, ctx)
        if self._renderer is None:
            return
        update = getattr(self._renderer, f"update_{split}")
        for m, steps in zip(metrics, steps_since(metrics, starts)):
            for state in self._running.states((split, m.name), m, steps, m.name in self._numeric[split]):
                update(state)
        progress = TrainingProgress(item.progress, item.global_progress, item.iteration)
        render = getattr(self._renderer, f"render_{split}")
        if takes_indicators(render):
            render(progress, indicators(progress))
        else:
            render(progress)

    def _end_epoch(self, split: str, epoch: int) -> None:
        entries = {m.name: EpochEntry(*m.finish_epoch()) for m in self._metrics[split]}
        for m in self._metrics[split]:
            self._running.restart((split, m.name))
        if entries:
            log.info("epoch %d %s: %s", epoch, split, ", ".join(f"{k}={e.value:.4g}" for k, e in entries.items()))
        self.store.end_epoch(Split(split), epoch, entries)
