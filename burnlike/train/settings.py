"""`LearnerSettings`: everything a `LearnerBuilder` (or `SupervisedTraining`, or the app through
them) is told, as one frozen value. The builder's setters replace it; `builder.callbacks_for`,
`builder.trainer_kwargs_for` and the custom-strategy launch read it.

An option only a Lightning Trainer can apply says so in its field's metadata (`LIGHTNING_ONLY`,
the setter's name), so the list of such options is written once, beside the options themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import lightning as L
from lightning.pytorch.loggers import Logger

from burnlike.record.format.location import AnyPath
from burnlike.train.checkpoint import CheckpointingStrategy, MetricEarlyStoppingStrategy
from burnlike.train.graph_step import CudaGraphConfig
from burnlike.train.interrupter import Interrupter
from burnlike.train.logger import ApplicationLogger
from burnlike.train.metric.base import Metric
from burnlike.train.renderer import MetricsRendererTraining
from burnlike.train.strategy import Execution

if TYPE_CHECKING:  # pragma: no cover  (burnlike.record is imported when a checkpointer is built)
    from burnlike.record import Recorder

LIGHTNING_ONLY = "lightning_only"  # field metadata: the setter of an option only a Lightning Trainer applies


def _lightning(setter: str) -> dict[str, str]:
    return {LIGHTNING_ONLY: setter}


@dataclasses.dataclass(frozen=True)
class LearnerSettings:
    """The builder's options (Burn's `LearnerBuilder` fields); defaults are Burn's."""

    artifact_dir: AnyPath
    train_metrics: tuple[Metric, ...] = ()
    valid_metrics: tuple[Metric, ...] = ()
    numeric_train: tuple[str, ...] = ()  # the metric names of the summary (Burn's summary_metrics)
    numeric_valid: tuple[str, ...] = ()
    execution: Execution | None = None  # None: one device, the best there is
    interrupter: Interrupter | None = None
    num_epochs: int = 1
    num_iterations: int | None = None
    valid_every: int | None = None
    grads_accumulation: int | None = None
    summary: bool = False
    early_stopping: tuple[MetricEarlyStoppingStrategy, ...] = ()
    checkpointing_strategy: CheckpointingStrategy | None = None  # None: Burn's default
    recorder: Recorder | None = None  # the file checkpointer's
    checkpoint: int | str | None = None  # resume from this epoch, or "last"
    application_logger: ApplicationLogger = True
    progress_bar: bool = True
    renderer: MetricsRendererTraining | None = None
    log_every_n_steps: int = 0
    hyperparams: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    trainer_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict,
                                                          metadata=_lightning("trainer_kwargs(...)"))
    callbacks: tuple[L.Callback, ...] = dataclasses.field(default=(), metadata=_lightning("callback(...)"))
    loggers: tuple[Logger, ...] = dataclasses.field(default=(), metadata=_lightning("with_logger(...)"))
    cuda_graph: CudaGraphConfig | None = dataclasses.field(default=None, metadata=_lightning("cuda_graph()"))
    async_checkpoints: bool = dataclasses.field(default=False, metadata=_lightning("async_checkpoints()"))

    @property
    def numeric(self) -> dict[str, list[str]]:
        """The summary's metric names by split."""
        return {"train": list(self.numeric_train), "valid": list(self.numeric_valid)}

    def lightning_only_set(self) -> list[str]:
        """The setters of the Lightning-only options set away from their defaults."""
        return [f.metadata[LIGHTNING_ONLY] for f in dataclasses.fields(self)
                if LIGHTNING_ONLY in f.metadata and getattr(self, f.name) != _default(f)]


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default
