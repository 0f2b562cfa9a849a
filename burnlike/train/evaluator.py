"""Burn's evaluator (0.19): `EvaluatorBuilder(dir).metrics(...).build(model).eval(name, loader)`,
which returns the renderer as Burn's does; `evaluate(name, loader)` returns the values too.

Each `eval` is a Lightning `trainer.test` run of the model's inference step (`valid_step` or
`inference_step`) with the registered metrics, on the device the model is on unless told otherwise.
The results are Burn's tagged test split (0.21 `Split::Test(tag)`): `test/<tag>/epoch-1/<Metric>.log`
and `Test (<tag>)` rows in the summary, next to any training run logged in the same directory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ProgressBar
from torch import nn

from burnlike.train.builder import flat_metrics
from burnlike.train.logger import (
    ApplicationLogger,
    ApplicationLoggerInstaller,
    FileMetricLogger,
    application_logger,
    install_application_logger,
    remove_experiment_log,
    tagged_test_split,
)
from burnlike.train.metric.base import Metric, MetricContext
from burnlike.train.module import check_metrics, output_type
from burnlike.train.renderer.base import MetricsRendererEvaluation
from burnlike.train.renderer.cli import CliMetricsRenderer
from burnlike.train.renderer.processor import EVALUATION_METHODS, EvaluationRendererCallback, check_renderer
from burnlike.train.step import InferenceStep, ValidStep, inference_fn
from burnlike.train.strategy import Execution, ExecutionStrategy, as_execution
from burnlike.train.summary import LearnerSummary

log = logging.getLogger("burnlike.train")

TEST_EPOCH = 1  # Burn's evaluator logs every evaluation as the test split's first epoch


@dataclass
class EvaluationResult:
    """What `Evaluator.evaluate` returns: `metrics`, each metric's value over the whole loader
    (synced across ranks), the `summary` (with `.summary()`), the `trainer`, and the `renderer`
    Burn's `eval` returns: the builder's, else Burn's default `CliMetricsRenderer`."""

    name: str  # the evaluation's name, as given to `evaluate`
    metrics: dict[str, float]  # each metric's value over the whole loader
    summary: LearnerSummary | None = None  # Burn's table, when the builder asked for a summary
    trainer: L.Trainer | None = field(default=None, repr=False)  # the Lightning Trainer that ran the test
    renderer: MetricsRendererEvaluation = field(default_factory=CliMetricsRenderer, repr=False)  # for the next builder


class _TestModule(L.LightningModule):
    """Runs the model's inference step over a test loader and feeds the metrics."""

    def __init__(self, model: nn.Module, metrics: Sequence[Metric]) -> None:
        super().__init__()
        self.model = model
        self.metric_list: list[Metric] = [m.clone() for m in metrics]
        self.test_metrics = nn.ModuleList(self.metric_list)
        self._step_name = inference_fn(model).__name__
        self._ctx = MetricContext()
        self.results: dict[str, tuple[float, list[tuple[float, float]]]] = {}

    def test_step(self, batch: Any, batch_idx: int) -> None:
        item = getattr(self.model, self._step_name)(batch)
        check_metrics(type(item), self.metric_list, "test")  # each step's: an untyped step may vary
        for m in self.metric_list:
            m.update(item, self._ctx)

    def on_test_epoch_end(self) -> None:
        self.results = {m.name: m.finish_epoch() for m in self.metric_list}


class Evaluator:
    """A model ready to evaluate on test loaders (what `EvaluatorBuilder.build` returns).

    Args:
        builder: The settings.
        model: The model: a module with an inference (or validation) step.

    Attributes:
        builder: The settings.
        model: The model evaluated.
        results: Metric values per evaluation (tag → metric → value), for the summary.
    """

    def __init__(self, builder: EvaluatorBuilder, model: nn.Module) -> None:
        self.builder = builder
        self.model = model
        self.results: dict[str, dict[str, float]] = {}

    def eval(self, name: str, dataloader: Any) -> MetricsRendererEvaluation:
        """Burn's `eval(name, dataloader)`: evaluate, and return the renderer (the builder's, else
        Burn's default `CliMetricsRenderer`) for the next `EvaluatorBuilder(dir).renderer(...)`. The
        values are in `results` and in `test/<name as a tag>/epoch-1/`; `evaluate` returns them all.

        Args:
            name: The evaluation's name (its log folder's tag).
            dataloader: The test batches.
        """
        return self.evaluate(name, dataloader).renderer

    def evaluate(self, name: str, dataloader: Any) -> EvaluationResult:
        """Evaluate on `dataloader`; the logs go to `test/<name as a tag>/epoch-1/`.

        Args:
            name: The evaluation's name (its log folder's tag).
            dataloader: The test batches.
        """
        b = self.builder
        split = tagged_test_split(str(name))
        module = _TestModule(self.model, b._metrics)
        kwargs = b.trainer_kwargs_for(self.model)
        if b._renderer is not None:  # in place of the progress display, as in Burn
            callbacks = list(kwargs.get("callbacks") or [])
            kwargs["callbacks"] = [*callbacks, EvaluationRendererCallback(b._renderer, str(name), module.metric_list,
                                                                          b._numeric)]
            kwargs["enable_progress_bar"] = any(isinstance(c, ProgressBar) for c in callbacks)
        trainer = L.Trainer(**kwargs)
        handler = install_application_logger(b._application_logger, b.directory, "evaluation.log")
        try:
            log.info("evaluating %s on %s", type(self.model).__name__, split)
            trainer.test(module, dataloader, verbose=False)
        finally:
            if handler is not None:
                remove_experiment_log(handler)
        values = {metric: value for metric, (value, _) in module.results.items()}
        summary = None
        if trainer.is_global_zero:
            logger = FileMetricLogger(b.directory)
            for metric, (_, history) in module.results.items():
                logger.log_epoch(split, TEST_EPOCH, metric, history)
            self.results[split.partition("/")[2]] = {k: v for k, v in values.items() if k in b._numeric}
            if b._summary:
                summary = self.summary()
                if b._renderer is None:
                    print(summary, flush=True)
            end = getattr(b._renderer, "on_test_end", None)
            if callable(end):  # Burn's default prints the summary
                end(summary)
        return EvaluationResult(str(name), values, summary, trainer, b._renderer or CliMetricsRenderer())

    def summary(self) -> LearnerSummary:
        """Burn's table (burn-train `learner/summary.rs`): a training run's rows from this directory,
        then the test metrics' rows of every `test/<tag>` folder there, this evaluator's or not."""
        names = sorted(self.builder._numeric)
        return LearnerSummary.from_dir(self.builder.directory, names, names, test_names=names)


class EvaluatorBuilder:
    """`EvaluatorBuilder(directory)` → `.build(model)` → `Evaluator.eval(name, loader)`.

    Args:
        directory: Where the test logs go (a training run's dir puts them beside its own).

    Attributes:
        directory: Where the test logs go.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._metrics: list[Metric] = []
        self._numeric: set[str] = set()
        self._summary = False
        self._application_logger: ApplicationLogger = True
        self._progress_bar = True
        self._renderer: MetricsRendererEvaluation | None = None
        self._execution: Execution | None = None
        self._trainer_kwargs: dict[str, Any] = {}

    def metric(self, metric: Metric) -> EvaluatorBuilder:
        """Compute `metric` on the test batches and log it.

        Args:
            metric: The metric.

        Raises:
            TypeError: Not a burnlike `Metric`.
        """
        if not isinstance(metric, Metric):
            raise TypeError(f"expected a burnlike Metric (e.g. AccuracyMetric()), got {type(metric).__name__}")
        self._metrics.append(metric)
        return self

    def metric_numeric(self, metric: Metric) -> EvaluatorBuilder:
        """`metric`, and its value in the summary.

        Args:
            metric: The metric.
        """
        self.metric(metric)
        self._numeric.add(metric.name)
        return self

    def metrics(self, *metrics: Metric | tuple[Metric, ...]) -> EvaluatorBuilder:
        """Register each metric as numeric (Burn's `.metrics((a, b))`).

        Args:
            *metrics: Metrics, or tuples of them.
        """
        for m in flat_metrics(metrics):
            self.metric_numeric(m)
        return self

    def metrics_text(self, *metrics: Metric | tuple[Metric, ...]) -> EvaluatorBuilder:
        """Register each metric as text: logged and rendered, not in the summary.

        Args:
            *metrics: Metrics, or tuples of them.
        """
        for m in flat_metrics(metrics):
            self.metric(m)
        return self

    def summary(self) -> EvaluatorBuilder:
        """Print Burn's summary table after each evaluation (`EvaluationResult.summary`)."""
        self._summary = True
        return self

    def with_application_logger(self, logger: ApplicationLoggerInstaller | bool | None) -> EvaluatorBuilder:
        """Burn's `with_application_logger(Option<Box<dyn ApplicationLoggerInstaller>>)`: None (or
        False) for none, an installer (`FileApplicationLoggerInstaller(path)`) for that one; True (the
        default) writes `evaluation.log` in the directory.

        Args:
            logger: The installer, True, or None/False.
        """
        self._application_logger = application_logger(logger, "EvaluatorBuilder.with_application_logger")
        return self

    def progress_bar(self, enabled: bool = True) -> EvaluatorBuilder:
        """Show Lightning's progress bar while evaluating (on unless turned off).

        Args:
            enabled: Whether to show it.
        """
        self._progress_bar = enabled
        return self

    def renderer(self, renderer: MetricsRendererEvaluation) -> EvaluatorBuilder:
        """Burn's `renderer(r)`: `r` (a `MetricsRenderer`, see `burnlike.train.renderer`) replaces the
        progress display; each `eval(name, loader)` calls `update_test(EvaluationName(name), state)`
        per metric and `render_test(EvaluationProgress, progress_indicators)` for every step, then
        `on_test_end(summary)`.

        Args:
            renderer: The metrics renderer.
        """
        self._renderer = check_renderer(renderer, EVALUATION_METHODS)
        return self

    def execution(self, strategy: Execution) -> EvaluatorBuilder:
        """Where to evaluate (default: the device the model's parameters are on, as in Burn).

        Args:
            strategy: An `ExecutionStrategy` (or Burn 0.19's `LearningStrategy`).
        """
        self._execution = as_execution(strategy)
        return self

    def trainer_kwargs(self, **kwargs: Any) -> EvaluatorBuilder:
        """Any other `lightning.Trainer` argument, over burnlike's.

        Args:
            **kwargs: Trainer arguments (`precision`, `limit_test_batches` ...).
        """
        self._trainer_kwargs.update(kwargs)
        return self

    def trainer_kwargs_for(self, model: nn.Module) -> dict[str, Any]:
        """The Trainer's arguments for evaluating `model`: no logger, checkpoints or model summary,
        the execution's devices, then `trainer_kwargs` over them.

        Args:
            model: The model (its parameters' device is the default execution).
        """
        execution = self._execution
        if execution is None:
            device = next((p.device for p in model.parameters()), None)
            execution = ExecutionStrategy.single(device) if device is not None else Execution(())
        kwargs: dict[str, Any] = {"default_root_dir": str(self.directory), "logger": False,
                                  "enable_checkpointing": False, "enable_model_summary": False,
                                  "enable_progress_bar": self._progress_bar,
                                  **execution.trainer_kwargs()}
        return {**kwargs, **self._trainer_kwargs}

    def build(self, model: nn.Module) -> Evaluator:
        """The evaluator of `model`, after checking it has an inference step the metrics can read.

        Args:
            model: The model: a module with an inference (or validation) step.

        Raises:
            TypeError: The model has no inference step, or its output doesn't feed a metric.
        """
        inference_fn(model)  # a clear error now if the model has no inference step
        item_type = output_type(model, InferenceStep) or output_type(model, ValidStep)
        if item_type is not None:
            check_metrics(item_type, self._metrics, "test")
        return Evaluator(self, model)
