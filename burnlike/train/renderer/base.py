"""Burn's metrics renderer traits and what they receive (burn-train `renderer/base.rs`, 0.21).

A renderer replaces the progress display: `LearnerBuilder(dir).renderer(MyRenderer())` (or
`SupervisedTraining(...).renderer(...)`). During a fit it gets, for every train step,
`update_train(MetricState)` once per train metric and then `render_train(TrainingProgress,
progress_indicators)`; the same with `update_valid`/`render_valid` for every valid step;
`register_metric(MetricDefinition)` for each metric when training starts, and
`on_train_end(summary)` at the end (the summary is None without `.summary()`; the default prints it).
Burn ≤ 0.20's one-argument `render_train(item)` / `render_valid(item)` are called with the item alone.
`EvaluatorBuilder(dir).renderer(r)` does the same for each `eval(name, loader)`:
`update_test(EvaluationName(name), state)`, `render_test(EvaluationProgress, progress_indicators)`
and `on_test_end(summary)`.

Burn's enum variants are class methods in Burn's casing (`MetricState::Numeric(entry, value)` is
`MetricState.Numeric(entry, value)`); `Option<T>` is `T | None`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from burnlike.data.dataloader import Progress
from burnlike.train.metric.entry import MetricDefinition, MetricEntry, NumericEntry
from burnlike.train.summary import LearnerSummary

__all__ = [
    "EvaluationName",
    "EvaluationProgress",
    "MetricState",
    "MetricsRenderer",
    "MetricsRendererEvaluation",
    "MetricsRendererTraining",
    "ProgressType",
    "TrainingProgress",
]


@dataclass(frozen=True)
class MetricState:
    """Burn's `MetricState::{Generic(MetricEntry), Numeric(MetricEntry, NumericEntry)}`:
    `numeric_entry` is None for a generic state. A numeric metric's entry formats as Burn's do
    (`epoch 91.25 % - batch 87.50 %`: the epoch's running mean, then the step's value) and its
    `numeric_entry` is the step's `NumericEntry.Aggregated(value, count)`."""

    entry: MetricEntry  # the metric's name and its formatted and serialized values
    numeric_entry: NumericEntry | None = None  # a numeric metric's step value (None: a generic state)

    @classmethod
    def Generic(cls, entry: MetricEntry) -> MetricState:  # noqa: N802 - Burn's variant name
        """A metric's state as text only.

        Args:
            entry: The metric's entry.
        """
        return cls(entry)

    @classmethod
    def Numeric(cls, entry: MetricEntry, numeric_entry: NumericEntry) -> MetricState:  # noqa: N802 - Burn's variant name
        """A numeric metric's state: its entry and the step's value.

        Args:
            entry: The metric's entry.
            numeric_entry: The step's value and how many items it covers.
        """
        return cls(entry, numeric_entry)


@dataclass(frozen=True)
class TrainingProgress:
    """Burn 0.21's `TrainingProgress { progress, global_progress, iteration }`: `progress` is the
    split's pass in dataset items (`Progress(items_processed, items_total)`), `global_progress` the
    epochs (`Progress(epoch, num_epochs)`, from 1) and `iteration` the step within the epoch (from 1).
    Burn ≤ 0.20's fields `epoch` and `epoch_total` are there too, read from `global_progress`."""

    progress: Progress | None  # the split's pass, in dataset items (None: not known)
    global_progress: Progress  # the epochs: Progress(epoch, num_epochs), from 1
    iteration: int | None = None  # the step within the epoch, from 1

    @classmethod
    def none(cls) -> TrainingProgress:
        """Burn's `TrainingProgress::none()`: nothing processed."""
        return cls(None, Progress(0, 0), None)

    @property
    def epoch(self) -> int:
        """The epoch, from 1 (Burn ≤ 0.20's field)."""
        return self.global_progress.items_processed

    @property
    def epoch_total(self) -> int:
        """The number of epochs (Burn ≤ 0.20's field)."""
        return self.global_progress.items_total


@dataclass(frozen=True)
class EvaluationProgress:
    """Burn's `EvaluationProgress { progress, iteration }`."""

    progress: Progress  # the test pass, in dataset items
    iteration: int | None = None  # the step, from 1


@dataclass(frozen=True)
class ProgressType:
    """Burn's `ProgressType::{Detailed { tag, progress }, Value { tag, value }}`: a detailed
    indicator has a `progress`, a value indicator a `value`. A fit renders `Epoch` (detailed),
    `Iteration` (value) and `Items` (detailed), as Burn's processor does."""

    tag: str  # what the indicator counts ("Epoch", "Iteration", "Items")
    progress: Progress | None = None  # a detailed indicator's progress
    value: int | None = None  # a value indicator's value

    @classmethod
    def Detailed(cls, tag: str, progress: Progress) -> ProgressType:  # noqa: N802 - Burn's variant name
        """An indicator with a done/total progress.

        Args:
            tag: What it counts.
            progress: Done and total.
        """
        return cls(tag, progress=progress)

    @classmethod
    def Value(cls, tag: str, value: int) -> ProgressType:  # noqa: N802 - Burn's variant name
        """An indicator with one value.

        Args:
            tag: What it counts.
            value: The count.
        """
        return cls(tag, value=value)


@dataclass(frozen=True)
class EvaluationName:
    """Burn's `EvaluationName`: the name an evaluation's metrics are grouped under."""

    name: str  # the name given to `eval(name, loader)`

    def as_str(self) -> str:
        """The name."""
        return self.name

    def __str__(self) -> str:
        return self.name


class MetricsRendererTraining(ABC):
    """Burn's `MetricsRendererTraining`: what a fit calls (see the module's docstring for when)."""

    @abstractmethod
    def update_train(self, state: MetricState) -> None:
        """A train metric's state after a step.

        Args:
            state: The metric's state.
        """

    @abstractmethod
    def update_valid(self, state: MetricState) -> None:
        """A valid metric's state after a step.

        Args:
            state: The metric's state.
        """

    @abstractmethod
    def render_train(self, item: TrainingProgress, progress_indicators: list[ProgressType]) -> None:
        """A train step is done: where the fit stands.

        Args:
            item: The fit's progress.
            progress_indicators: `Epoch`, `Iteration` and `Items`, as Burn's processor renders them.
        """

    @abstractmethod
    def render_valid(self, item: TrainingProgress, progress_indicators: list[ProgressType]) -> None:
        """A valid step is done: where the validation stands.

        Args:
            item: The validation's progress.
            progress_indicators: `Epoch`, `Iteration` and `Items`.
        """

    def on_train_end(self, summary: LearnerSummary | None) -> None:
        """The fit ended (done or interrupted); Burn's default prints the summary when there is one.

        Args:
            summary: The run's summary (None without `.summary()`).
        """
        if summary is not None:
            print(summary, flush=True)


class MetricsRendererEvaluation(ABC):
    """Burn's `MetricsRendererEvaluation`: what an evaluation calls."""

    @abstractmethod
    def update_test(self, name: EvaluationName, state: MetricState) -> None:
        """A test metric's state after a step of evaluation `name`.

        Args:
            name: The evaluation.
            state: The metric's state.
        """

    @abstractmethod
    def render_test(self, item: EvaluationProgress, progress_indicators: list[ProgressType]) -> None:
        """A test step is done.

        Args:
            item: The evaluation's progress.
            progress_indicators: `Iteration` and `Items`.
        """

    def on_test_end(self, summary: LearnerSummary | None) -> None:
        """The evaluation ended; Burn's default prints the summary when there is one.

        Args:
            summary: The summary (None without `.summary()`).
        """
        if summary is not None:
            print(summary, flush=True)


class MetricsRenderer(MetricsRendererEvaluation, MetricsRendererTraining):
    """Burn's `MetricsRenderer`: a renderer for training and evaluation."""

    @abstractmethod
    def manual_close(self) -> None:
        """Keep the renderer from closing by itself (Burn's TUI waits for the user)."""

    @abstractmethod
    def register_metric(self, definition: MetricDefinition) -> None:
        """A metric of the run, before its first step.

        Args:
            definition: Its name, description, unit and whether higher is better.
        """
