"""`LearnerBuilder`: Burn 0.19's builder, translated onto a `lightning.Trainer`.

Every Burn method maps to Trainer arguments or callbacks; `trainer_kwargs(...)` and `callback(...)`
pass anything else straight to Lightning, so the adapter never blocks a Lightning feature.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lightning as L
import torch
from torch import nn

from burnlike.optim.optimizer import Optimizer, OptimizerConfig, TorchOptimizerFactory
from burnlike.train.checkpoint import (
    CheckpointingStrategy,
    FileCheckpointer,
    MetricEarlyStoppingStrategy,
    default_checkpointing_strategy,
)
from burnlike.train.graph_step import CudaGraphConfig
from burnlike.train.learner import Learner
from burnlike.train.metric.base import Metric
from burnlike.train.module import LrOrScheduler, StepModule
from burnlike.train.renderer import BurnProgressBar

if TYPE_CHECKING:  # pragma: no cover  (burnlike.record is imported when a checkpointer is built)
    from burnlike.record import Recorder

Device = str | int | torch.device


class LearnerBuilder:
    """`LearnerBuilder(artifact_dir)...build(model, optim, lr)` → `Learner` (Burn 0.19)."""

    def __init__(self, artifact_dir: str | Path) -> None:
        self.artifact_dir = Path(artifact_dir)
        self._train_metrics: list[Metric] = []
        self._valid_metrics: list[Metric] = []
        self._numeric: dict[str, list[str]] = {"train": [], "valid": []}
        self._devices: list[Device] | None = None
        self._num_epochs = 1
        self._grads_accumulation: int | None = None
        self._summary = False
        self._early_stopping: list[MetricEarlyStoppingStrategy] = []
        self._strategy: CheckpointingStrategy | None = None
        self._recorder: Recorder | None = None
        self._checkpoint: int | None = None
        self._trainer_kwargs: dict[str, Any] = {}
        self._callbacks: list[L.Callback] = []
        self._application_logger = True
        self._progress_bar = True
        self._cuda_graph: CudaGraphConfig | None = None

    # Metrics -----------------------------------------------------------------------------------
    def metric_train(self, metric: Metric) -> LearnerBuilder:
        self._train_metrics.append(_metric(metric))
        return self

    def metric_valid(self, metric: Metric) -> LearnerBuilder:
        self._valid_metrics.append(_metric(metric))
        return self

    def metric_train_numeric(self, metric: Metric) -> LearnerBuilder:
        self._numeric["train"].append(_metric(metric).name)
        return self.metric_train(metric)

    def metric_valid_numeric(self, metric: Metric) -> LearnerBuilder:
        self._numeric["valid"].append(_metric(metric).name)
        return self.metric_valid(metric)

    def metrics(self, *metrics: Metric) -> LearnerBuilder:
        """Register each metric as train and valid numeric (Burn's `.metrics((a, b))`)."""
        for m in metrics:
            self.metric_train_numeric(m).metric_valid_numeric(m.clone())
        return self

    # Loop settings -----------------------------------------------------------------------------
    def devices(self, devices: Sequence[Device]) -> LearnerBuilder:
        self._devices = list(devices)
        trainer_devices(self._devices)  # validate now, not at fit time
        return self

    def num_epochs(self, num_epochs: int) -> LearnerBuilder:
        self._num_epochs = _positive("num_epochs", num_epochs)
        return self

    def grads_accumulation(self, accumulation: int) -> LearnerBuilder:
        self._grads_accumulation = _positive("grads_accumulation", accumulation)
        return self

    def summary(self) -> LearnerBuilder:
        self._summary = True
        return self

    def early_stopping(self, strategy: MetricEarlyStoppingStrategy) -> LearnerBuilder:
        self._early_stopping.append(strategy)
        return self

    def with_checkpointing_strategy(self, strategy: CheckpointingStrategy) -> LearnerBuilder:
        self._strategy = strategy
        return self

    def with_file_checkpointer(self, recorder: Recorder) -> LearnerBuilder:
        """Save `checkpoint/model-N.<ext>` through `RecorderCheckpointIO(recorder)`."""
        self._recorder = recorder
        return self

    def checkpoint(self, epoch: int) -> LearnerBuilder:
        """Resume from the checkpoint of `epoch` (training continues at epoch + 1)."""
        self._checkpoint = _positive("checkpoint", epoch)
        return self

    def with_application_logger(self, enabled: bool | None) -> LearnerBuilder:
        self._application_logger = bool(enabled)
        return self

    def progress_bar(self, enabled: bool = True) -> LearnerBuilder:
        self._progress_bar = enabled
        return self

    def cuda_graph(self, enabled: bool = True, generators: Sequence[torch.Generator] = ()) -> LearnerBuilder:
        """The fast path: capture the whole training step in CUDA graphs and replay it per batch.

        Named after what it does, so the cost is plain too: shapes must be static (other batches,
        such as the short last one, run eagerly) and the step must not sync with the host.
        Without CUDA it is accepted and the step runs eagerly, with one warning saying why (the
        same for what can't be captured: DDP, fp16, an optimizer without a capturable mode).
        Pair it with `DataLoaderBuilder.on_device(...)` so batches are on the GPU already.
        `generators`: CUDA generators the step draws from besides torch's default one.
        """
        self._cuda_graph = CudaGraphConfig(generators=tuple(generators)) if enabled else None
        return self

    # Lightning pass-through -------------------------------------------------------------------
    def trainer_kwargs(self, **kwargs: Any) -> LearnerBuilder:
        """Any other `lightning.Trainer` argument (precision, strategy, logger, limit_*_batches …)."""
        self._trainer_kwargs.update(kwargs)
        return self

    def callback(self, *callbacks: L.Callback) -> LearnerBuilder:
        self._callbacks.extend(callbacks)
        return self

    # Build -------------------------------------------------------------------------------------
    def build(self, model: nn.Module, optim: Optimizer | OptimizerConfig | TorchOptimizerFactory,
              lr_or_scheduler: LrOrScheduler) -> Learner:
        graph = self._cuda_graph
        if graph is not None and self._grads_accumulation:  # manual optimization: the step accumulates
            graph = CudaGraphConfig(self._grads_accumulation, graph.warmup, graph.generators)
        module = StepModule(model, optim, lr_or_scheduler, self._train_metrics, self._valid_metrics, cuda_graph=graph)

        callbacks: list[L.Callback] = []
        plugins: list[Any] = []
        if self._progress_bar:
            callbacks.append(BurnProgressBar())
        if self._recorder is not None:
            from burnlike.record import RecorderCheckpointIO

            plugins.append(RecorderCheckpointIO(self._recorder))
            strategy = self._strategy or default_checkpointing_strategy()
            callbacks.append(FileCheckpointer(self.artifact_dir, self._recorder.file_extension(), strategy))
        callbacks += [s.to_callback() for s in self._early_stopping]
        callbacks += self._callbacks

        kwargs: dict[str, Any] = {
            "default_root_dir": str(self.artifact_dir),
            "max_epochs": self._num_epochs,
            "logger": False,
            "enable_checkpointing": self._recorder is not None,
            "enable_model_summary": False,
            "enable_progress_bar": self._progress_bar,
            "num_sanity_val_steps": 0,  # Burn runs no sanity validation
            "callbacks": callbacks,
        }
        if plugins:
            kwargs["plugins"] = plugins
        if self._grads_accumulation and graph is None:
            kwargs["accumulate_grad_batches"] = self._grads_accumulation
        # Without `.devices(...)`: one device, the best there is (Lightning's `auto`: a GPU when
        # there is one), as Burn's examples pick their backend's default device.
        kwargs.update(trainer_devices(self._devices) if self._devices else {"accelerator": "auto", "devices": 1})
        for key, value in self._trainer_kwargs.items():
            if key in ("callbacks", "plugins") and key in kwargs:
                kwargs[key] = list(kwargs[key]) + list(value)
            else:
                kwargs[key] = value
        trainer = L.Trainer(**kwargs)
        return Learner(
            trainer=trainer,
            module=module,
            artifact_dir=self.artifact_dir,
            numeric=self._numeric,
            summary=self._summary,
            checkpoint=self._checkpoint,
            checkpoint_extension=self._recorder.file_extension() if self._recorder is not None else None,
            application_logger=self._application_logger,
        )


def trainer_devices(devices: Sequence[Device]) -> dict[str, Any]:
    """Burn device list → Trainer `accelerator`/`devices` (`"cpu"`, `"cuda:1"`, torch.device, ints)."""
    if not devices:
        raise ValueError("devices([...]) needs at least one device")
    kinds, indices = set(), []
    for d in devices:
        if isinstance(d, int) and not isinstance(d, bool):
            kinds.add("cuda")
            indices.append(d)
            continue
        try:
            dev = torch.device(d)
        except (TypeError, RuntimeError):
            raise ValueError(f"devices: {d!r} is not a device (expected 'cpu', 'cuda:N', 'mps', an int or torch.device)") from None
        kinds.add(dev.type)
        indices.append(dev.index or 0)
    if len(kinds) > 1:
        raise ValueError(f"devices: all devices must be of one kind, got {sorted(kinds)}")
    kind = kinds.pop()
    if kind == "cpu":
        return {"accelerator": "cpu", "devices": len(devices)}
    if kind == "cuda":
        return {"accelerator": "gpu", "devices": indices}
    if kind == "mps":
        return {"accelerator": "mps", "devices": 1}
    raise ValueError(f"devices: unsupported device type {kind!r}")


def _metric(metric: Metric) -> Metric:
    if not isinstance(metric, Metric):
        raise TypeError(f"expected a burnlike Metric (e.g. AccuracyMetric()), got {type(metric).__name__}")
    return metric


def _positive(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value
