"""`Learner.fit(train, valid) -> TrainingResult`: a configured Trainer plus Burn's artifacts."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
from torch import nn

from burnlike.train.checkpoint import checkpoint_path
from burnlike.train.logger import FileMetricLogger, install_experiment_log, remove_experiment_log
from burnlike.train.metric.store import EpochEntry, Split
from burnlike.train.module import StepModule
from burnlike.train.summary import LearnerSummary
from burnlike.train.tracking import continue_logger_runs

log = logging.getLogger("burnlike.train")


@dataclass
class TrainingResult:
    """`model` is the trained model in eval mode (Burn returns the inner, non-autodiff module)."""

    model: nn.Module
    summary: LearnerSummary | None = None
    trainer: L.Trainer | None = field(default=None, repr=False)


class Learner:
    def __init__(
        self,
        trainer: L.Trainer,
        module: StepModule,
        artifact_dir: Path,
        numeric: dict[str, list[str]],
        summary: bool = False,
        checkpoint: int | None = None,
        checkpoint_extension: str | None = None,
        application_logger: bool = True,
    ) -> None:
        self.trainer = trainer
        self.module = module
        self.artifact_dir = artifact_dir
        self.numeric = numeric
        self.show_summary = summary
        self.checkpoint = checkpoint
        self.checkpoint_extension = checkpoint_extension
        self.application_logger = application_logger
        self._file_logger = FileMetricLogger(artifact_dir)
        module.store.add_listener(self._write_logs)

    @property
    def model(self) -> nn.Module:
        return self.module.model

    def _write_logs(self, split: Split, epoch: int, entries: Mapping[str, EpochEntry]) -> None:
        if self.trainer.is_global_zero:  # rank 0's own steps: Burn's files are per process
            for name, entry in entries.items():
                self._file_logger.log_epoch(split.value, epoch, name, entry.steps)

    def resume_path(self) -> Path | None:
        if self.checkpoint is None:
            return None
        if self.checkpoint_extension is None:
            raise ValueError("checkpoint(epoch) needs with_file_checkpointer(recorder): there is nothing to resume from")
        path = checkpoint_path(self.artifact_dir, self.checkpoint, self.checkpoint_extension)
        if not path.exists():
            raise FileNotFoundError(f"checkpoint({self.checkpoint}): no checkpoint file at {path}")
        return path

    def fit(self, train_loader: Iterable[Any], valid_loader: Iterable[Any] | None = None) -> TrainingResult:
        self.artifact_dir.mkdir(parents=True, exist_ok=True)
        handler = install_experiment_log(self.artifact_dir) if self.application_logger else None
        try:
            ckpt = self.resume_path()
            log.info("fitting %s for %s epochs%s", type(self.model).__name__, self.trainer.max_epochs,
                     f", resuming from {ckpt}" if ckpt else "")
            if ckpt is not None:
                continue_logger_runs(self.trainer, ckpt)
            self.trainer.fit(self.module, train_loader, valid_loader, ckpt_path=str(ckpt) if ckpt else None)
            log.info("training finished at epoch %d", self.trainer.current_epoch)
        finally:
            if handler is not None:
                remove_experiment_log(handler)
        summary = None
        if self.show_summary and self.trainer.is_global_zero:
            summary = LearnerSummary.from_store(self.module.store, self.numeric["train"], self.numeric["valid"])
            print(summary, flush=True)
            _plot(summary, self.artifact_dir / "metrics.png")
        model = self.module.model
        model.eval()
        return TrainingResult(model, summary, self.trainer)


def _plot(summary: LearnerSummary, path: Path) -> None:
    """Per-epoch curves of every numeric metric, if matplotlib is installed (extra `plot`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    names = sorted({m.name for m in summary.metrics})
    if not names:
        return
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        for m in summary.metrics:
            if m.name == name:
                ax.plot(list(m.epochs), list(m.epochs.values()), marker="o", label=m.split)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
