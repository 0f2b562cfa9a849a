"""Burn's metric loggers on Lightning's: the metric store's values go to every `trainer.loggers` entry.

- Each split's epoch values, as the store holds them (synced across ranks), under Burn's names
  (`train/Accuracy`, `valid/Loss`) at step = the epoch, counted from 1.
- Every `every_n_steps` training batches (0: never), the running means as `train_step/<Name>` at
  step = the global step (one host sync per metric each time).
- The run's hyperparameters (the app sends the resolved config and the git commit) once per fit.
- Resuming continues the same logger runs: each logger's id/version goes into the checkpoint (this
  callback's state) and `continue_logger_runs` sets it back on the logger before it starts, so TensorBoard/CSV append to the
  same version, MLflow to the same run id, W&B to the same run id.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import re
import warnings
import weakref
from collections.abc import Mapping
from typing import Any, cast

import lightning as L
from lightning.pytorch.loggers import Logger

from burnlike._lightning import (
    set_logger_version,
    set_mlflow_run_id,
    set_wandb_id,
    started_experiment,
    wandb_init,
)
from burnlike.record.checkpoint.shard_folder import read_training_state
from burnlike.record.format.location import RemotePath, as_path
from burnlike.train.metric.store import EpochEntry, Split
from burnlike.train.module import StepModule

log = logging.getLogger("burnlike.train")

STEP_PREFIX = "train_step"


class MetricLoggerBridge(L.Callback):
    """Sends the store's epochs (and running values every N steps) to the Trainer's loggers."""

    def __init__(self, every_n_steps: int = 0, hyperparams: Mapping[str, Any] | None = None) -> None:
        if not isinstance(every_n_steps, int) or isinstance(every_n_steps, bool) or every_n_steps < 0:
            raise ValueError(f"every_n_steps must be an integer >= 0 (0: epoch values only), got {every_n_steps!r}")
        self.every_n_steps = every_n_steps
        self.hyperparams = dict(hyperparams or {})
        self._trainer: L.Trainer | None = None
        self._listening: set[int] = set()
        self._batches = 0

    # Lifecycle ---------------------------------------------------------------------------------
    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        self._trainer = trainer
        if isinstance(pl_module, StepModule) and id(pl_module) not in self._listening:
            pl_module.store.add_listener(self._epoch)
            self._listening.add(id(pl_module))

        for logger in trainer.loggers:  # their runs started just before this hook
            rows = _PREVIOUS_ROWS.pop(logger, None)
            if rows and trainer.is_global_zero:  # other ranks' loggers have no experiment to write to
                cast(Any, logger).experiment.metrics.extend(rows)

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.hyperparams and trainer.is_global_zero:
            for logger in trainer.loggers:
                if logger in _CONTINUED:  # its run has them (MLflow refuses changed params)
                    _CONTINUED.discard(logger)
                    log.info("resume: %s keeps the hyperparameters its run started with", type(logger).__name__)
                else:
                    log_hyperparams(logger, self.hyperparams)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any) -> None:
        self._batches += 1
        if not self.every_n_steps or self._batches % self.every_n_steps or not trainer.loggers:
            return
        if not isinstance(pl_module, StepModule):
            return
        values = {f"{STEP_PREFIX}/{m.name}": m.running() for m in pl_module.metrics("train") if m.numeric and m.updated}
        values = {k: v for k, v in values.items() if not math.isnan(v)}
        if values and trainer.is_global_zero:
            for logger in trainer.loggers:
                logger.log_metrics(values, step=trainer.global_step)

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._end_runs(trainer, 0)

    def on_exception(self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException) -> None:
        """A preempted or failed fit ends its logger runs too: a W&B run left open is still "in use"
        when the requeued job starts it again a moment later."""
        code = exception.code if isinstance(exception, SystemExit) and isinstance(exception.code, int) else 1
        self._end_runs(trainer, code, stopped_by=exception)

    def _end_runs(self, trainer: L.Trainer, exit_code: int, stopped_by: BaseException | None = None) -> None:
        """Save each logger and finish its W&B run. After a fit that raised (`stopped_by`), a logger
        that can't end its run is named in a warning and the fit's own exception goes on: a signal
        sent to every process of a job also stops W&B's service, and a lost connection must not
        turn a preemption's exit status into a crash."""
        if not trainer.is_global_zero:
            return
        for logger in trainer.loggers:
            try:
                logger.save()
                if type(logger).__name__ == "WandbLogger" and started_experiment(logger) is not None:
                    # else the next fit in this process (or the requeued job) reuses a run still open
                    cast(Any, logger).experiment.finish(exit_code=exit_code)
            except Exception as error:
                if stopped_by is None:
                    raise
                log.warning("%s could not end its run after the fit stopped (%s): %s: %s", type(logger).__name__,
                            type(stopped_by).__name__, type(error).__name__, error)

    def _epoch(self, split: Split, epoch: int, entries: Mapping[str, EpochEntry]) -> None:
        trainer = self._trainer
        if trainer is None or not trainer.is_global_zero or not entries:
            return
        values = {f"{split.value}/{name}": entry.value for name, entry in entries.items()}
        for logger in trainer.loggers:
            logger.log_metrics(values, step=epoch)
            logger.save()

    # Resume: the logger runs' ids travel in the checkpoint -------------------------------------
    def state_dict(self) -> dict[str, Any]:
        trainer = self._trainer
        if trainer is None:
            return {"runs": []}
        return {"runs": [run_identity(logger) for logger in trainer.loggers]}



def continue_logger_runs(trainer: L.Trainer, ckpt_path: str | os.PathLike[str] | RemotePath) -> None:
    """Before `trainer.fit(..., ckpt_path)`: point the loggers at the runs the checkpoint names.
    (Lightning starts each logger's run in its setup, before it restores callback states, so this
    can't wait for `load_state_dict`.)"""
    bridge = next((c for c in trainer.callbacks if isinstance(c, MetricLoggerBridge)), None)  # type: ignore[attr-defined]
    if bridge is None or not trainer.loggers:
        return
    path = as_path(ckpt_path) if not isinstance(ckpt_path, RemotePath) else ckpt_path
    checkpoint = read_training_state(path) if path.is_dir() else trainer.strategy.checkpoint_io.load_checkpoint(str(path))
    state = checkpoint.get("callbacks", {}).get(bridge.state_key, {})
    for logger, run in zip(trainer.loggers, state.get("runs", [])):
        continue_run(logger, run)


def run_identity(logger: Logger) -> dict[str, Any]:
    """`{"kind": class name, "version": id}`: what `continue_run` needs to append to this run."""
    return {"kind": type(logger).__name__, "version": logger.version}


def continue_run(logger: Logger, run: Mapping[str, Any]) -> None:
    """Point `logger` at the checkpoint's run before it starts (a different kind of logger, or one
    that already started, begins its own run, and the log says so)."""
    kind, version = run.get("kind"), run.get("version")
    if kind != type(logger).__name__ or version is None:
        log.warning("resume: logger %s is not the checkpoint's (%s); it starts a new run", type(logger).__name__, kind)
        return
    if started_experiment(logger) is not None:
        log.warning("resume: %s already started a run; it can't continue run %s", kind, version)
        return
    if kind in ("TensorBoardLogger", "CSVLogger"):
        set_logger_version(logger, version)
        if kind == "CSVLogger":  # its writer deletes an existing metrics.csv: keep the rows to write back
            _PREVIOUS_ROWS[logger] = _csv_rows(logger)
            warnings.filterwarnings("ignore", message=re.escape(f"Experiment logs directory {logger.log_dir} exists"))
    elif kind == "MLFlowLogger":
        set_mlflow_run_id(logger, version)
    elif kind == "WandbLogger":
        set_wandb_id(logger, version)
        wandb_init(logger).update(id=version, resume="allow")
    else:
        log.warning("resume: burnlike can't continue a %s run; it starts a new one", kind)
        return
    _CONTINUED.add(logger)
    log.info("resume: %s continues run %s", kind, version)


# Keyed by the logger itself, weakly: an entry goes with its logger (one that never reached `fit`
# must not make a later logger at the same address look continued, as `id()` keys did).
_PREVIOUS_ROWS: weakref.WeakKeyDictionary[Logger, list[dict[str, float]]] = weakref.WeakKeyDictionary()
_CONTINUED: weakref.WeakSet[Logger] = weakref.WeakSet()


def _csv_rows(logger: Logger) -> list[dict[str, float]]:
    """The rows of the CSV logger's existing metrics.csv (numbers; empty cells left out)."""
    path = as_path(str(logger.log_dir)) / "metrics.csv"  # a local file, or at a URL (artifacts=s3://…)
    if not path.exists():
        return []
    rows = [{k: float(v) for k, v in row.items() if v not in ("", None)}
            for row in csv.DictReader(io.StringIO(path.read_text(), newline=""))]
    for row in rows:
        if "step" in row:
            row["step"] = int(row["step"])
    return rows


def log_hyperparams(logger: Logger, params: Mapping[str, Any]) -> None:
    """The logger's own hyperparameter call; TensorBoard shows hyperparameters only with a summary
    naming metrics, which Lightning writes only with metric values: write it without any."""
    logger.log_hyperparams(dict(params))
    if type(logger).__name__ == "TensorBoardLogger":
        from torch.utils.tensorboard.summary import hparams

        flat = {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in flatten(params).items()}
        writer = cast(Any, logger).experiment._get_file_writer()
        for summary in hparams(flat, {}):  # type: ignore[no-untyped-call]
            writer.add_summary(summary)


def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"model": {"hidden_size": 512}}` → `{"model/hidden_size": 512}`."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out
