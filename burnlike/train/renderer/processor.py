"""The rendering half of Burn's event processors (burn-train `metric/processor/full.rs`) as Lightning
callbacks: they hand a renderer each step's metric states and progress, of a fit
(`MetricsRendererCallback`) or of an evaluation (`EvaluationRendererCallback`).

The states are the step values the run's metrics already hold (`Metric` keeps each step's
`(value, count)` for the epoch): the callback reads the new ones after each step, all metrics in
one transfer, and keeps the epoch's running mean per metric; the store's epoch end starts the next
epoch's. That is one host sync per step, which Burn's renderers pay too; the built-in progress
displays refresh by time instead. Only the global-zero process renders.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import lightning as L

from burnlike.data.dataloader import Progress
from burnlike.train.metric.base import Metric, steps_since
from burnlike.train.metric.entry import (
    MetricDefinition,
    MetricEntry,
    MetricId,
    NumericAttributes,
    NumericEntry,
    SerializedEntry,
    format_float,
)
from burnlike.train.metric.store import EpochEntry, Split
from burnlike.train.module import StepModule
from burnlike.train.renderer.base import (
    EvaluationName,
    EvaluationProgress,
    MetricState,
    ProgressType,
    TrainingProgress,
)

SPLITS = ("train", "valid")
RENDERER_METHODS = ("update_train", "update_valid", "render_train", "render_valid")  # MetricsRendererTraining
EVALUATION_METHODS = ("update_test", "render_test")  # MetricsRendererEvaluation
PRECISION = 2  # Burn's numeric metrics format with 2 decimals


def check_renderer(renderer: Any, methods: Sequence[str] = RENDERER_METHODS) -> Any:
    """`renderer`, if it has `methods` (the training ones: a `MetricsRendererTraining` or an object
    shaped like one)."""
    missing = [name for name in methods if not callable(getattr(renderer, name, None))]
    if missing:
        raise TypeError(f"renderer(...) expects a MetricsRenderer (burnlike.train.renderer); "
                        f"{type(renderer).__name__} has no {', '.join(missing)}")
    return renderer


def takes_indicators(method: Any) -> bool:
    """Whether a bound `render_*` method takes Burn 0.21's `progress_indicators` after the item."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


class MetricsRendererCallback(L.Callback):
    """Drives `renderer` through a fit; `numeric` names each split's metrics registered as numeric
    (`metric_train_numeric`, `.metrics(...)`), which get `MetricState.Numeric`, the others
    `MetricState.Generic`."""

    def __init__(self, renderer: Any, numeric: Mapping[str, Sequence[str]] | None = None) -> None:
        self.renderer = check_renderer(renderer)
        self.numeric = {split: set((numeric or {}).get(split, ())) for split in SPLITS}
        self._with_indicators = {split: takes_indicators(getattr(renderer, f"render_{split}")) for split in SPLITS}
        self._seen: dict[tuple[str, str], int] = {}  # (split, metric) → steps already rendered this epoch
        self._running = RunningMeans()  # by (split, metric)
        self._listening: set[int] = set()

    # Fit start ---------------------------------------------------------------------------------
    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if isinstance(pl_module, StepModule) and id(pl_module.store) not in self._listening:
            self._listening.add(id(pl_module.store))
            pl_module.store.add_listener(self._epoch_stored)  # a bound method: ddp_spawn pickles the store

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not isinstance(pl_module, StepModule):
            return
        for split in SPLITS:  # a resumed epoch's restored steps were rendered before the interruption
            for m in pl_module.metrics(split):
                self._seen[(split, m.name)] = m.num_steps
                self._running.restart((split, m.name), m.host_history() if m.updated else ())
        if not trainer.is_global_zero:
            return
        register = getattr(self.renderer, "register_metric", None)
        if callable(register):
            done: set[str] = set()
            for split in SPLITS:
                for m in pl_module.metrics(split):
                    if m.name not in done:
                        done.add(m.name)
                        register(definition(m))

    # Steps -------------------------------------------------------------------------------------
    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self._render(trainer, pl_module, "train", batch_idx, trainer.num_training_batches, trainer.train_dataloader)

    def on_validation_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        if trainer.sanity_checking:
            return
        batches = trainer.num_val_batches
        loaders = trainer.val_dataloaders
        loader = loaders[dataloader_idx] if isinstance(loaders, (list, tuple)) else loaders
        total = batches[dataloader_idx] if dataloader_idx < len(batches) else math.inf
        self._render(trainer, pl_module, "valid", batch_idx, total, loader)

    def _render(self, trainer: L.Trainer, pl_module: L.LightningModule, split: str, batch_idx: int,
                batches: float, loader: Any) -> None:
        if not isinstance(pl_module, StepModule) or not trainer.is_global_zero:
            return
        metrics = pl_module.metrics(split)
        starts = [self._start(split, m) for m in metrics]
        update = getattr(self.renderer, f"update_{split}")
        for m, steps in zip(metrics, steps_since(metrics, starts)):
            key = (split, m.name)
            self._seen[key] = m.num_steps
            for state in self._running.states(key, m, steps, m.name in self.numeric[split]):
                update(state)
        epoch = Progress(pl_module.current_epoch + 1, _int(trainer.max_epochs))
        item = TrainingProgress(items(loader, batch_idx + 1, batches), epoch, batch_idx + 1)
        render = getattr(self.renderer, f"render_{split}")
        if self._with_indicators[split]:
            render(item, indicators(item))
        else:
            render(item)

    def _start(self, split: str, m: Metric) -> int:
        seen = self._seen.get((split, m.name), 0)
        return seen if seen <= m.num_steps else 0

    # Epoch ends --------------------------------------------------------------------------------
    def _epoch_stored(self, split: Split, epoch: int, entries: Mapping[str, EpochEntry]) -> None:
        """The split's metrics were reset for the next epoch: render from their first step."""
        name = Split(split).value
        for key in [k for k in self._seen if k[0] == name]:
            self._seen[key] = 0
            self._running.restart(key)


class EvaluationRendererCallback(L.Callback):
    """Drives `renderer` through an evaluation (`Evaluator.eval`): for each test step
    `update_test(name, state)` per metric, then `render_test(EvaluationProgress, indicators)`;
    `register_metric` first. `metrics` are the evaluation's, `numeric` the names registered as numeric."""

    def __init__(self, renderer: Any, name: str, metrics: Sequence[Metric], numeric: Iterable[str] = ()) -> None:
        self.renderer = renderer
        self.name = EvaluationName(str(name))
        self.metrics = list(metrics)
        self.numeric = set(numeric)
        self._with_indicators = takes_indicators(renderer.render_test)
        self._seen = [0] * len(self.metrics)
        self._running = RunningMeans()  # by the metric's index

    def on_test_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        register = getattr(self.renderer, "register_metric", None)
        if callable(register) and trainer.is_global_zero:
            for m in self.metrics:
                register(definition(m))

    def on_test_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                          batch_idx: int, dataloader_idx: int = 0) -> None:
        if not trainer.is_global_zero:
            return
        for i, (m, steps) in enumerate(zip(self.metrics, steps_since(self.metrics, self._seen))):
            self._seen[i] = m.num_steps
            for state in self._running.states(i, m, steps, m.name in self.numeric):
                self.renderer.update_test(self.name, state)
        batches = trainer.num_test_batches
        loaders = trainer.test_dataloaders
        loader = loaders[dataloader_idx] if isinstance(loaders, (list, tuple)) else loaders
        total_batches = batches[dataloader_idx] if dataloader_idx < len(batches) else math.inf
        item = EvaluationProgress(items(loader, batch_idx + 1, total_batches), batch_idx + 1)
        if self._with_indicators:
            out = [ProgressType.Value("Iteration", batch_idx + 1), ProgressType.Detailed("Items", item.progress)]
            self.renderer.render_test(item, out)
        else:
            self.renderer.render_test(item)


def metric_state(m: Metric, value: float, count: float, running: float, numeric: bool) -> MetricState:
    """Burn's state of a metric after a step (`NumericMetricState::update`): the epoch's running mean
    and the step's value, formatted; numeric when `m` is registered as numeric."""
    unit = f" {m.unit}" if m.unit else ""
    formatted = (f"epoch {format_float(running, PRECISION)}{unit} - "
                 f"batch {format_float(value, PRECISION)}{unit}")
    entry_value = NumericEntry.Aggregated(value, round(count))
    entry = MetricEntry(MetricId(m.name), SerializedEntry(formatted, entry_value.serialize()))
    if m.numeric and numeric:
        return MetricState.Numeric(entry, entry_value)
    return MetricState.Generic(entry)


class RunningMeans:
    """Each metric's running mean over the epoch so far, shown beside each step's value: the
    count-weighted sums (Σ value·count, Σ count) per key, e.g. (split, metric name)."""

    def __init__(self) -> None:
        self.sums: dict[Hashable, tuple[float, float]] = {}

    def states(self, key: Hashable, m: Metric, steps: Iterable[tuple[float, float]], numeric: bool) -> list[MetricState]:
        """The `MetricState` after each of `steps`, with the running mean including it."""
        total, weight = self.sums.get(key, (0.0, 0.0))
        out = []
        for value, count in steps:
            total, weight = total + value * count, weight + count
            out.append(metric_state(m, value, count, total / weight if weight else math.nan, numeric))
        self.sums[key] = (total, weight)
        return out

    def restart(self, key: Hashable, steps: Iterable[tuple[float, float]] = ()) -> None:
        """Start `key`'s epoch anew, from `steps` already taken (a resumed epoch's)."""
        steps = list(steps)
        self.sums[key] = (sum(v * c for v, c in steps), sum(c for _, c in steps))


def definition(m: Metric) -> MetricDefinition:
    """Burn's `MetricDefinition` of a burnlike metric."""
    attributes = NumericAttributes(m.unit or None, m.higher_is_better) if m.numeric else None
    return MetricDefinition(MetricId(m.name), m.name, None, attributes)


def items(loader: Any, batches_done: int, batches_total: float) -> Progress:
    """Where a pass stands in dataset items (Burn's `Progress`), from the loader's sampler (this
    process's share under DDP) and batch size; in batches when the loader doesn't say (a total of 0:
    unknown)."""
    batch_size = getattr(loader, "batch_size", None)
    try:
        sampled = len(loader.sampler)
    except (AttributeError, TypeError):
        sampled = None
    known = math.isfinite(batches_total)
    if isinstance(batch_size, int) and batch_size > 0 and sampled is not None:
        total = min(sampled, int(batches_total) * batch_size) if known else sampled
        return Progress(min(batches_done * batch_size, total), total)
    return Progress(batches_done, int(batches_total) if known else 0)


def indicators(item: TrainingProgress) -> list[ProgressType]:
    """Burn's progress indicators of a training step: `Epoch`, `Iteration`, `Items`."""
    out = [ProgressType.Detailed("Epoch", item.global_progress)]
    if item.iteration is not None:
        out.append(ProgressType.Value("Iteration", item.iteration))
    if item.progress is not None:
        out.append(ProgressType.Detailed("Items", item.progress))
    return out


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int) and value >= 0 else 0
