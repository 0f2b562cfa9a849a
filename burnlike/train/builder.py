"""`LearnerBuilder`: Burn 0.19's builder (and the guide's), translated onto a `lightning.Trainer`.

`SupervisedTraining` (Burn 0.20/0.21) is this builder with its loaders, so all three spellings go
through the one `build` below.

Every Burn method maps to Trainer arguments or callbacks; `trainer_kwargs(...)` and `callback(...)`
pass anything else straight to Lightning, so the adapter never blocks a Lightning feature.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lightning as L
import torch
from lightning.pytorch.callbacks import ProgressBar
from lightning.pytorch.loggers import Logger
from lightning.pytorch.plugins.io import CheckpointIO
from torch import nn

from burnlike.checks import positive_int
from burnlike.optim.optimizer import Optimizer, OptimizerConfig, TorchOptimizerFactory
from burnlike.record.format.location import AnyPath, RemotePath, as_path
from burnlike.train.checkpoint import (
    PREEMPTED,
    CheckpointingStrategy,
    FileCheckpointer,
    MetricEarlyStoppingStrategy,
    checkpoint_path,
    default_checkpointing_strategy,
)
from burnlike.train.components import LrOrScheduler
from burnlike.train.graph_step import CudaGraphConfig
from burnlike.train.interrupter import Interrupter, InterrupterCallback
from burnlike.train.learner import Learner
from burnlike.train.logger import ApplicationLoggerInstaller, application_logger
from burnlike.train.metric.base import Metric
from burnlike.train.module import StepModule
from burnlike.train.preemption import Preemption, RandomState
from burnlike.train.process_group import Peers
from burnlike.train.profiler import NoProfiler
from burnlike.train.quiet import quiet_lightning
from burnlike.train.renderer import MetricsRendererTraining, progress_display
from burnlike.train.renderer.processor import MetricsRendererCallback, check_renderer
from burnlike.train.settings import LearnerSettings
from burnlike.train.sharded import compact_strategy
from burnlike.train.strategy import Device, Execution, as_execution, trainer_devices
from burnlike.train.tracking import MetricLoggerBridge

if TYPE_CHECKING:  # pragma: no cover  (burnlike.record is imported when a checkpointer is built)
    from burnlike.record import Recorder


class LearnerBuilder:
    """`LearnerBuilder(artifact_dir)...build(model, optim, lr)` → `Learner` (Burn 0.19).

    Each setter returns the builder, so calls chain as Burn's do; together they fill `settings`,
    which `build` translates (`trainer_kwargs_for`).

    Args:
        artifact_dir: The run dir: checkpoints, metric logs and `experiment.log` go there (an fsspec
            URL such as `s3://` works too).

    Attributes:
        settings: Every option set so far (a frozen `LearnerSettings`; each setter replaces it).
    """

    def __init__(self, artifact_dir: str | Path | RemotePath) -> None:
        self.settings = LearnerSettings(as_path(artifact_dir))

    @property
    def artifact_dir(self) -> AnyPath:
        """The run dir."""
        return self.settings.artifact_dir

    def _set(self, **changes: Any) -> LearnerBuilder:
        self.settings = dataclasses.replace(self.settings, **changes)
        return self

    # Metrics -----------------------------------------------------------------------------------
    def metric_train(self, metric: Metric) -> LearnerBuilder:
        """Compute `metric` on the training batches and log it (the progress display shows it).

        Args:
            metric: The metric (`AccuracyMetric()`, `LossMetric()` ...).
        """
        return self._set(train_metrics=(*self.settings.train_metrics, _metric(metric)))

    def metric_valid(self, metric: Metric) -> LearnerBuilder:
        """Compute `metric` on the validation batches and log it.

        Args:
            metric: The metric.
        """
        return self._set(valid_metrics=(*self.settings.valid_metrics, _metric(metric)))

    def metric_train_numeric(self, metric: Metric) -> LearnerBuilder:
        """`metric_train`, and its epoch values in the summary and the plot (Burn's numeric metrics).

        Args:
            metric: The metric.
        """
        self._set(numeric_train=(*self.settings.numeric_train, _metric(metric).name))
        return self.metric_train(metric)

    def metric_valid_numeric(self, metric: Metric) -> LearnerBuilder:
        """`metric_valid`, and its epoch values in the summary, the plot and early stopping.

        Args:
            metric: The metric.
        """
        self._set(numeric_valid=(*self.settings.numeric_valid, _metric(metric).name))
        return self.metric_valid(metric)

    def metrics(self, *metrics: Metric | tuple[Metric, ...]) -> LearnerBuilder:
        """Register each metric as train and valid numeric (Burn's `.metrics((a, b))`)."""
        for m in flat_metrics(metrics):
            self.metric_train_numeric(m).metric_valid_numeric(m.clone())
        return self

    def metrics_text(self, *metrics: Metric | tuple[Metric, ...]) -> LearnerBuilder:
        """Register each metric for train and valid, logged but not in the summary (Burn 0.19)."""
        for m in flat_metrics(metrics):
            self.metric_train(m).metric_valid(m.clone())
        return self

    # Loop settings -----------------------------------------------------------------------------
    def devices(self, devices: Sequence[Device]) -> LearnerBuilder:
        """The guide's (Burn ≤ 0.18) device list; several devices let Lightning pick (DDP).

        Args:
            devices: The devices to train on (`"cpu"`, `"cuda:0"`, `torch.device` ...).
        """
        trainer_devices(list(devices))  # validate now, not at fit time
        return self._set(execution=Execution(tuple(devices)))

    def learning_strategy(self, strategy: Execution) -> LearnerBuilder:
        """Burn 0.19: `LearningStrategy.SingleDevice(d)`, `.MultiDeviceNaive(ds)`,
        `.DistributedDataParallel(devices=ds, config=c)` or `ddp(ds, config)` (0.20/0.21's strategies too).

        Args:
            strategy: Where and how to train.
        """
        return self._set(execution=as_execution(strategy))

    def with_interrupter(self, interrupter: Interrupter) -> LearnerBuilder:
        """Stop the fit at the next step when `interrupter.stop()` is called (from any thread).

        Args:
            interrupter: The shared stop flag.

        Raises:
            TypeError: Not an `Interrupter`.
        """
        if not isinstance(interrupter, Interrupter):
            raise TypeError(f"with_interrupter expects a burnlike.train.Interrupter, got {type(interrupter).__name__}")
        return self._set(interrupter=interrupter)

    def interrupter(self) -> Interrupter:
        """The interrupter of this run (created on first use): `interrupter().stop("reason")`."""
        interrupter = self.settings.interrupter or Interrupter()
        self._set(interrupter=interrupter)
        return interrupter

    def num_epochs(self, num_epochs: int) -> LearnerBuilder:
        """Train for `num_epochs` epochs (1 unless set; Lightning's `max_epochs`).

        Args:
            num_epochs: The number of epochs, >= 1.
        """
        return self._set(num_epochs=positive_int(num_epochs, "num_epochs"))

    def num_iterations(self, iterations: int) -> LearnerBuilder:
        """Train on `iterations` batches in all, in place of `num_epochs` (Lightning's `max_steps`,
        counted in batches as Burn steps its LR scheduler): one epoch of that many batches, or
        `iterations / k` epochs of `valid_every(k)`.

        Args:
            iterations: The number of training batches, >= 1.
        """
        return self._set(num_iterations=positive_int(iterations, "num_iterations"))

    def valid_every(self, iterations: int) -> LearnerBuilder:
        """Validate every `iterations` batches (Lightning's `val_check_interval`), keeping Burn's
        per-epoch layout: an epoch becomes `iterations` batches, and its logs, checkpoint, summary
        row and resume point are the validation's. The train loader continues across these epochs
        instead of restarting (`DataLoaderBuilder`'s loaders: `set_epoch_batches`; any other sized
        loader is wrapped), so no batch repeats before a whole pass is done. With
        `num_iterations(n)`, n must be a multiple of `iterations`; without, `num_epochs` counts them.

        Args:
            iterations: Training batches between two validations, >= 1.
        """
        return self._set(valid_every=positive_int(iterations, "valid_every"))

    def grads_accumulation(self, accumulation: int) -> LearnerBuilder:
        """Burn's gradient accumulation (burn-train `supervised/strategies/single/epoch.rs`): the
        optimizer steps on the *sum* of every `accumulation` batches' gradients, the LR scheduler
        steps every batch (batch k trains at the schedule's k-th rate), and the gradients of a group
        the epoch ends in are dropped. It runs in Lightning's manual optimization (the `clip` of the
        optimizer config still applies; Trainer's `gradient_clip_val` does not).

        Lightning's accumulation is still there under its own name: `trainer_kwargs(
        accumulate_grad_batches=n)` averages the n gradients, steps the scheduler per optimizer step
        and steps on a short last group.

        Args:
            accumulation: Batches per optimizer step, >= 1.
        """
        return self._set(grads_accumulation=positive_int(accumulation, "grads_accumulation"))

    def summary(self) -> LearnerBuilder:
        """Print Burn's summary table at the end of the fit (each metric's best and worst epoch);
        it is also `TrainingResult.summary`."""
        return self._set(summary=True)

    def early_stopping(self, strategy: MetricEarlyStoppingStrategy) -> LearnerBuilder:
        """Stop the fit when `strategy` says a metric has stopped improving (checked each epoch).

        Args:
            strategy: For instance `MetricEarlyStoppingStrategy(LossMetric(), Aggregate.MEAN,
                Direction.LOWEST, Split.VALID, StoppingCondition.NoImprovementSince(n_epochs=2))`.
        """
        return self._set(early_stopping=(*self.settings.early_stopping, strategy))

    def with_checkpointing_strategy(self, strategy: CheckpointingStrategy) -> LearnerBuilder:
        """Which epochs' checkpoints the file checkpointer keeps (Burn's default: the last two).

        Args:
            strategy: `KeepLastNCheckpoints(n)`, `MetricCheckpointingStrategy(...)`, or a
                `ComposedCheckpointingStrategy` of several.
        """
        return self._set(checkpointing_strategy=strategy)

    def with_file_checkpointer(self, recorder: Recorder) -> LearnerBuilder:
        """Save `checkpoint/model-N.<ext>` through `RecorderCheckpointIO(recorder)`.

        Args:
            recorder: The checkpoints' format (`CompactRecorder()` ...).
        """
        return self._set(recorder=recorder)

    def async_checkpoints(self, enabled: bool = True) -> LearnerBuilder:
        """Write the file checkpointer's checkpoints on a writer thread: training waits only for
        the tensors' copy (`RecorderCheckpointIO(recorder, async_save=True)`); a write's error is
        raised at the next save or at the end of the fit, and a kill mid-write leaves the previous
        checkpoint whole. Needs `with_file_checkpointer(...)`.

        Args:
            enabled: Whether to write on the writer thread.
        """
        return self._set(async_checkpoints=bool(enabled))

    def checkpoint(self, epoch: int | str) -> LearnerBuilder:
        """Resume from the checkpoint of `epoch` (training continues at epoch + 1), or `"last"`:
        the newest complete checkpoint in the run dir, a preemption's mid-epoch one included.

        Args:
            epoch: The epoch whose checkpoint to resume from, or `"last"`.

        Raises:
            ValueError: A string other than `"last"`, or an epoch below 1.
        """
        if epoch == "last":
            return self._set(checkpoint="last")
        if isinstance(epoch, str):
            raise ValueError(f"checkpoint: expected an epoch number or 'last', got {epoch!r}")
        return self._set(checkpoint=positive_int(epoch, "checkpoint"))

    def with_application_logger(self, logger: ApplicationLoggerInstaller | bool | None) -> LearnerBuilder:
        """Burn's `with_application_logger(Option<Box<dyn ApplicationLoggerInstaller>>)`: None (or
        False) for none, an installer (`FileApplicationLoggerInstaller(path)`, or any object with
        `install()`) for that one; True (the default) writes `experiment.log` in the artifact dir.

        Args:
            logger: The installer, True, or None/False.
        """
        return self._set(application_logger=application_logger(logger, "with_application_logger"))

    def with_logger(self, *loggers: Logger, every_n_steps: int | None = None,
                    hyperparams: Mapping[str, Any] | None = None) -> LearnerBuilder:
        """Lightning loggers (TensorBoard, MLflow, W&B, CSV …) that get the metric store's epoch values
        under Burn's names (`train/Accuracy`, step = epoch), the running values every `every_n_steps`
        batches (0: never), and `hyperparams` once per fit. Resuming continues their runs.

        Args:
            *loggers: The Lightning loggers.
            every_n_steps: Log the running values every that many batches (None: keep the
                current setting, 0 unless set).
            hyperparams: Logged once per fit, added to those given before.
        """
        for logger in loggers:
            if not isinstance(logger, Logger):
                raise TypeError(f"with_logger expects lightning loggers (e.g. TensorBoardLogger(...)), "
                                f"got {type(logger).__name__}")
        self._set(loggers=(*self.settings.loggers, *loggers))
        if every_n_steps is not None:
            self._set(log_every_n_steps=every_n_steps)
        if hyperparams:
            self._set(hyperparams={**self.settings.hyperparams, **hyperparams})
        return self

    def with_metric_logger(self, logger: Logger) -> LearnerBuilder:
        """Burn 0.20's spelling of `with_logger`.

        Args:
            logger: A Lightning logger.
        """
        return self.with_logger(logger)

    def progress_bar(self, enabled: bool = True) -> LearnerBuilder:
        """Show the progress display while training (on unless turned off; a `renderer` replaces it).

        Args:
            enabled: Whether to show it.
        """
        return self._set(progress_bar=enabled)

    def renderer(self, renderer: MetricsRendererTraining) -> LearnerBuilder:
        """Burn's `renderer(r)`: `r` (a `MetricsRenderer`, see `burnlike.train.renderer`) replaces the
        progress display. It gets every train and valid step's metric states and progress (one host
        sync per step, as in Burn), `register_metric` before the first step and
        `on_train_end(summary)` at the end; it is `TrainingResult.renderer` afterwards. Under DDP the
        global-zero process renders (with `ddp_spawn`, a copy of `r` in that process).

        Args:
            renderer: The metrics renderer.
        """
        return self._set(renderer=check_renderer(renderer))

    def cuda_graph(self, enabled: bool = True, generators: Sequence[torch.Generator] = ()) -> LearnerBuilder:
        """The fast path: capture the whole training step in CUDA graphs and replay it per batch.

        Named after what it does, so the cost is plain too: shapes must be static (other batches,
        such as the short last one, run eagerly) and the step must not sync with the host.
        Without CUDA it is accepted and the step runs eagerly, with one warning saying why (the
        same for what can't be captured: DDP, fp16, an optimizer without a capturable mode).
        Pair it with `DataLoaderBuilder.on_device(...)` so batches are on the GPU already.

        Args:
            enabled: Whether to capture (False turns it off again).
            generators: CUDA generators the step draws from besides torch's default one.
        """
        return self._set(cuda_graph=CudaGraphConfig(generators=tuple(generators)) if enabled else None)

    # Lightning pass-through -------------------------------------------------------------------
    def trainer_kwargs(self, **kwargs: Any) -> LearnerBuilder:
        """Any other `lightning.Trainer` argument (precision, strategy, logger, limit_*_batches …)."""
        return self._set(trainer_kwargs={**self.settings.trainer_kwargs, **kwargs})

    def callback(self, *callbacks: L.Callback) -> LearnerBuilder:
        """Add Lightning callbacks to the Trainer, after burnlike's own.

        Args:
            *callbacks: The callbacks.
        """
        return self._set(callbacks=(*self.settings.callbacks, *callbacks))

    # Build -------------------------------------------------------------------------------------
    def build(self, model: nn.Module, optim: Optimizer | OptimizerConfig | TorchOptimizerFactory,
              lr_or_scheduler: LrOrScheduler) -> Learner:
        """The learner: these settings as a configured Lightning Trainer around `model`, ready to
        `fit(train_loader, valid_loader)`.

        Args:
            model: The model: a module with `train_step` and `valid_step`.
            optim: An optimizer config (`AdamConfig()`), an `Optimizer`, or a torch factory
                `(params, lr=...) -> torch.optim.Optimizer`.
            lr_or_scheduler: A learning rate, or a Burn LR scheduler config or instance.

        Raises:
            ValueError: Settings that contradict each other (such as `grads_accumulation` with
                Lightning's `accumulate_grad_batches`, or `async_checkpoints` without a file checkpointer).
        """
        settings = self.settings
        check_settings(settings)
        epoch_batches, _ = epochs_for(settings)
        module = StepModule(model, optim, lr_or_scheduler, settings.train_metrics, settings.valid_metrics,
                            cuda_graph=settings.cuda_graph, grads_accumulation=settings.grads_accumulation or 1)
        quiet_lightning()
        trainer = L.Trainer(**trainer_kwargs_for(settings))
        recorder = settings.recorder
        return Learner(
            trainer=trainer,
            module=module,
            artifact_dir=settings.artifact_dir,
            numeric=settings.numeric,
            summary=settings.summary,
            checkpoint=settings.checkpoint,
            checkpoint_extension=recorder.file_extension() if recorder is not None else None,
            application_logger=settings.application_logger,
            renderer=settings.renderer,
            epoch_batches=epoch_batches,
        )


def check_settings(settings: LearnerSettings) -> None:
    """Options that can't go together, refused before anything is built."""
    accumulation, user = settings.grads_accumulation or 1, settings.trainer_kwargs
    if accumulation > 1:  # Burn's accumulation runs in manual optimization (graph_step.ManualStep)
        if user.get("accumulate_grad_batches", 1) != 1:
            raise ValueError(f"grads_accumulation({accumulation}) with trainer_kwargs(accumulate_grad_batches=...): "
                             "one or the other (grads_accumulation sums the gradients as Burn does, "
                             "accumulate_grad_batches averages them as Lightning does)")
        if user.get("gradient_clip_val") is not None:
            raise ValueError(f"grads_accumulation({accumulation}) with trainer_kwargs(gradient_clip_val=...): Burn's "
                             "accumulation runs in manual optimization, where Lightning doesn't clip; clip with "
                             "the optimizer config's grad_clipping (GradientClippingConfig.Norm(x), as Burn)")
    epochs_for(settings)
    if settings.async_checkpoints and settings.recorder is None:
        raise ValueError("async_checkpoints() needs with_file_checkpointer(recorder): there is nothing to write")
    if settings.async_checkpoints and _own_checkpoint_io(settings):
        raise ValueError("async_checkpoints(): trainer_kwargs(plugins=...) already has a CheckpointIO; "
                         "give it async_save=True itself, or drop it and let with_file_checkpointer's "
                         "recorder write")


def callbacks_for(settings: LearnerSettings) -> list[L.Callback]:
    """burnlike's Lightning callbacks for `settings`, then the user's `callback(...)`s (those in
    `trainer_kwargs(callbacks=...)` join them in `merge_trainer_kwargs`)."""
    callbacks: list[L.Callback] = []
    if settings.renderer is not None:  # Burn: a renderer of one's own replaces the default display
        callbacks.append(MetricsRendererCallback(settings.renderer, settings.numeric))
    elif settings.progress_bar and not _own_progress_bar(settings):
        callbacks.append(progress_display())  # a progress bar passed as a callback replaces it
    if settings.recorder is not None:
        directory, extension = settings.artifact_dir, settings.recorder.file_extension()
        strategy = settings.checkpointing_strategy or default_checkpointing_strategy()
        callbacks.append(FileCheckpointer(directory, settings.recorder, strategy))
        # a partial, not a lambda: ddp_spawn pickles the callbacks into its processes
        callbacks.append(Preemption(functools.partial(checkpoint_path, directory, extension=extension,
                                                      kind=PREEMPTED)))
        callbacks.append(RandomState())
    callbacks.append(Peers())  # names a rank that died mid-fit (burnlike.train.process_group)
    callbacks += [s.to_callback() for s in settings.early_stopping]
    if settings.interrupter is not None:
        callbacks.append(InterrupterCallback(settings.interrupter))
    if settings.loggers:
        callbacks.append(MetricLoggerBridge(settings.log_every_n_steps, settings.hyperparams))
    return callbacks + list(settings.callbacks)


def plugins_for(settings: LearnerSettings) -> list[Any]:
    """The checkpoint plugin writing through the file checkpointer's recorder, unless the user
    passed a CheckpointIO of their own."""
    if settings.recorder is None or _own_checkpoint_io(settings):
        return []
    from burnlike.record import RecorderCheckpointIO

    return [RecorderCheckpointIO(settings.recorder, async_save=settings.async_checkpoints)]


def trainer_kwargs_for(settings: LearnerSettings) -> dict[str, Any]:
    """The `lightning.Trainer` arguments for `settings`: burnlike's, the device strategy's, then
    the user's `trainer_kwargs(...)` over them; a sharded strategy keeps the recorder's format."""
    _, num_epochs = epochs_for(settings)
    renderer_bar = settings.renderer is None or _own_progress_bar(settings)
    kwargs: dict[str, Any] = {
        "default_root_dir": str(settings.artifact_dir),
        "max_epochs": num_epochs,
        "logger": list(settings.loggers) if settings.loggers else False,
        "enable_checkpointing": settings.recorder is not None,
        "enable_model_summary": False,
        "enable_progress_bar": settings.progress_bar and renderer_bar,
        "num_sanity_val_steps": 0,  # Burn runs no sanity validation
        "callbacks": callbacks_for(settings),
        "profiler": NoProfiler(),  # a profiler in trainer_kwargs replaces it
    }
    plugins = plugins_for(settings)
    if plugins:
        kwargs["plugins"] = plugins
    # Without `.devices(...)` or a strategy: one device, the best there is (Lightning's `auto`: a
    # GPU when there is one), as Burn's examples pick their backend's default device.
    kwargs.update(settings.execution.trainer_kwargs() if settings.execution is not None
                  else {"accelerator": "auto", "devices": 1})
    kwargs = merge_trainer_kwargs(kwargs, settings.trainer_kwargs)
    if settings.recorder is not None and "strategy" in kwargs:  # sharded runs keep the recorder's format
        kwargs["strategy"] = compact_strategy(kwargs["strategy"], kwargs.get("accelerator", "auto"))
    return kwargs


def merge_trainer_kwargs(base: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """`user`'s Trainer arguments over `base`'s; callbacks and plugins are added to `base`'s."""
    merged = dict(base)
    for key, value in user.items():
        if key in ("callbacks", "plugins") and key in merged:
            merged[key] = list(merged[key]) + list(value)
        else:
            merged[key] = value
    return merged


def epochs_for(settings: LearnerSettings) -> tuple[int | None, int]:
    """(batches per epoch, None for a whole pass; the number of epochs)."""
    every, total = settings.valid_every, settings.num_iterations
    if every is None and total is None:
        return None, settings.num_epochs
    if "limit_train_batches" in settings.trainer_kwargs:
        raise ValueError("num_iterations/valid_every decide the batches of an epoch: leave "
                         "trainer_kwargs(limit_train_batches=...) out")
    if total is None:
        return every, settings.num_epochs
    if every is None:
        return total, 1
    if total % every:
        raise ValueError(f"num_iterations({total}) is not a multiple of valid_every({every}): each epoch is "
                         f"{every} batches (e.g. num_iterations({total // every * every or every}))")
    return every, total // every


def _own_progress_bar(settings: LearnerSettings) -> bool:
    """Whether the user passed a progress bar callback (it replaces burnlike's display)."""
    own = [*settings.callbacks, *settings.trainer_kwargs.get("callbacks", ())]
    return any(isinstance(c, ProgressBar) for c in own)


def _own_checkpoint_io(settings: LearnerSettings) -> bool:
    return any(isinstance(p, CheckpointIO) for p in settings.trainer_kwargs.get("plugins", ()))


def flat_metrics(metrics: tuple[Metric | tuple[Metric, ...], ...]) -> list[Metric]:
    """Burn's tuple registration `.metrics((a, b))` and Python's `.metrics(a, b)` alike."""
    return [m for entry in metrics for m in (entry if isinstance(entry, (tuple, list)) else (entry,))]


def _metric(metric: Metric) -> Metric:
    if not isinstance(metric, Metric):
        raise TypeError(f"expected a burnlike Metric (e.g. AccuracyMetric()), got {type(metric).__name__}")
    return metric


