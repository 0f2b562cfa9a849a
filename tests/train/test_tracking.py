"""`burnlike.train.tracking`: the metric store's values on Lightning's loggers (CSV, TensorBoard):
epoch values under Burn's names at step = the epoch, running means every n steps, the run's
hyperparameters. On resume a logger continues the checkpoint's run (same version or id) when it
is of the checkpoint's kind, has a version to go back to and hasn't started yet, and otherwise
says why it starts a new one; Lightning's warning about the continued run's existing folder is
silenced, no other."""

from __future__ import annotations

import csv
import gc
import logging
import re
import warnings

import lightning as L
import pytest
from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger

from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import CompactRecorder, DefaultRecorder
from burnlike.train import LearnerBuilder, StepModule, tracking
from burnlike.train.metric import AccuracyMetric, LossMetric
from burnlike.train.metric.store import EpochEntry, Split
from burnlike.train.tracking import continue_logger_runs, continue_run
from tests.helpers.toy import Classifier, loader
from tests.helpers.wandb_records import wandb_records
from tests.train.helpers import train_messages, write_checkpoint


@pytest.fixture(autouse=True)
def own_resume_notes(monkeypatch):
    """Each test starts with empty resume notes of the containers' own kind."""
    monkeypatch.setattr(tracking, "_CONTINUED", type(tracking._CONTINUED)())
    monkeypatch.setattr(tracking, "_PREVIOUS_ROWS", type(tracking._PREVIOUS_ROWS)())


class OwnLogger(Logger):
    """A logger of a kind burnlike can't continue."""

    name = "own"
    version = "v1"

    def log_metrics(self, metrics, step=None):
        pass

    def log_hyperparams(self, params, *args, **kwargs):
        pass


def bare_trainer(root, logger) -> L.Trainer:
    """A CPU Trainer with `logger` and no bar or summary: the bridge's hooks called by hand on it."""
    return L.Trainer(logger=logger, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
                     default_root_dir=root)


def fit_with_loggers(tmp_path, loggers, epochs=2, resume=None, every_n_steps=0):
    """Fit the toy classifier with `loggers` and hyperparameters; `resume`: the epoch to resume from."""
    b = (LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).num_epochs(epochs).progress_bar(False)
         .with_file_checkpointer(CompactRecorder())
         .with_logger(*loggers, every_n_steps=every_n_steps, hyperparams={"model": {"hidden": 8}, "git_commit": "abc"}))
    if resume is not None:
        b = b.checkpoint(resume)
    return b.build(Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16))


# --- continuing a logger's run on resume -----------------------------------------------------------
def test_continue_run_points_csv_and_tensorboard_loggers_at_the_checkpoints_version(tmp_path, caplog):
    csv, board = CSVLogger(tmp_path / "csv"), TensorBoardLogger(tmp_path / "tb")
    with caplog.at_level(logging.INFO, logger="burnlike.train"), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        continue_run(csv, {"kind": "CSVLogger", "version": 3})
        continue_run(board, {"kind": "TensorBoardLogger", "version": 5})
        # Lightning's warning about the existing folder of the continued run is silenced, no other
        warnings.warn(f"Experiment logs directory {csv.log_dir} exists and is not empty.", UserWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert csv.version == 3 and board.version == 5
    assert [str(w.message) for w in seen] == ["something else"]
    assert train_messages(caplog) == ["resume: CSVLogger continues run 3", "resume: TensorBoardLogger continues run 5"]


def test_continue_run_says_which_loggers_it_cannot_continue_and_which_it_does(tmp_path, caplog):
    board = TensorBoardLogger(tmp_path)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        continue_run(OwnLogger(), {"kind": "OwnLogger", "version": "v0"})
        continue_run(board, {"kind": "TensorBoardLogger", "version": 5})
    assert train_messages(caplog) == ["resume: burnlike can't continue a OwnLogger run; it starts a new one",
                                   "resume: TensorBoardLogger continues run 5"]
    assert board.version == 5


def test_continue_run_says_why_a_logger_starts_a_new_run(tmp_path, caplog):
    csv = CSVLogger(tmp_path / "csv")
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        continue_run(csv, {"kind": "TensorBoardLogger", "version": 3})  # another kind
        continue_run(csv, {"kind": "CSVLogger"})  # no version
        continue_run(csv, {"kind": "CSVLogger", "version": None})
        continue_run(OwnLogger(), {"kind": "OwnLogger", "version": 1})
        assert csv.experiment is not None  # its run starts: too late to point it elsewhere
        continue_run(csv, {"kind": "CSVLogger", "version": 3})
    assert csv.version == 0
    assert train_messages(caplog) == [
        "resume: logger CSVLogger is not the checkpoint's (TensorBoardLogger); it starts a new run",
        "resume: logger CSVLogger is not the checkpoint's (CSVLogger); it starts a new run",
        "resume: logger CSVLogger is not the checkpoint's (CSVLogger); it starts a new run",
        "resume: burnlike can't continue a OwnLogger run; it starts a new one",
        "resume: CSVLogger already started a run; it can't continue run 3",
    ]


def test_continue_run_resumes_a_wandb_run_by_id(tmp_path):
    """Whatever resume mode the logger was made with (`never`: new runs only): what a resume from
    the checkpoint asks for is the checkpoint's run."""
    pytest.importorskip("wandb")
    from lightning.pytorch.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), offline=True, project="p", resume="never")
    continue_run(logger, {"kind": "WandbLogger", "version": "run42"})
    assert logger.version == "run42" and logger._id == "run42"
    assert logger._wandb_init["id"] == "run42" and logger._wandb_init["resume"] == "allow"  # what wandb.init gets


def test_a_continued_logger_is_named_when_it_keeps_its_runs_hyperparameters(tmp_path, caplog):
    logger = CSVLogger(tmp_path, name="r", version=0)
    tracking.continue_run(logger, {"kind": "CSVLogger", "version": 0})
    trainer = L.Trainer(logger=logger, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        tracking.MetricLoggerBridge(hyperparams={"lr": 0.1}).on_fit_start(trainer, None)  # type: ignore[arg-type]
    assert "resume: CSVLogger keeps the hyperparameters its run started with" in [r.getMessage() for r in caplog.records]


def test_a_logger_that_never_trained_leaves_no_resume_note(tmp_path):
    """The notes are kept with their logger, not by its id(): a later logger at the same address
    must not look continued."""
    logger = CSVLogger(tmp_path, name="r", version=0)
    tracking.continue_run(logger, {"kind": "CSVLogger", "version": 0})
    assert logger in tracking._CONTINUED and logger in tracking._PREVIOUS_ROWS
    del logger
    gc.collect()
    assert len(tracking._CONTINUED) == 0 and len(tracking._PREVIOUS_ROWS) == 0


def test_resuming_from_a_checkpoint_without_logger_runs_starts_new_ones(tmp_path):
    csv = CSVLogger(tmp_path / "csv")
    learner = (LearnerBuilder(tmp_path).with_file_checkpointer(DefaultRecorder()).with_logger(csv).devices(["cpu"])
               .progress_bar(False).build(Classifier(), SgdConfig(), 0.1))
    for name, extra in (("bare.mpk", {}), ("no-bridge.mpk", {"callbacks": {}})):  # e.g. saved by a run without loggers
        write_checkpoint(tmp_path / name, 4, **extra)
        continue_logger_runs(learner.trainer, tmp_path / name)
    assert csv._version is None  # not pointed anywhere: its own next version
    plain = L.Trainer(logger=CSVLogger(tmp_path / "plain"), enable_progress_bar=False)  # no burnlike bridge
    continue_logger_runs(plain, tmp_path / "missing.mpk")  # nothing to read: the file is never opened


# --- loggers in a run ------------------------------------------------------------------------------
def test_csv_logger_gets_epochs_under_burns_names_and_resume_appends(tmp_path):
    fit_with_loggers(tmp_path, [CSVLogger(tmp_path, name="csv")], epochs=2, every_n_steps=2)
    fit_with_loggers(tmp_path, [CSVLogger(tmp_path, name="csv")], epochs=3, resume=2)
    versions = sorted(p.name for p in (tmp_path / "csv").iterdir())
    assert versions == ["version_0"]  # the resumed fit appended to the same version
    rows = list(csv.DictReader(open(tmp_path / "csv" / "version_0" / "metrics.csv")))
    epochs = [int(r["step"]) for r in rows if r.get("valid/Accuracy")]
    assert epochs == [1, 2, 3]
    assert {"train/Accuracy", "train/Loss", "valid/Loss", "train_step/Loss"} <= set(rows[0])
    hparams = (tmp_path / "csv" / "version_0" / "hparams.yaml").read_text()
    assert "git_commit: abc" in hparams and "hidden: 8" in hparams


def test_tensorboard_event_files_hold_epochs_and_hyperparameters(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    def tb():
        return TensorBoardLogger(tmp_path, name="tb", default_hp_metric=False)

    fit_with_loggers(tmp_path, [tb()], epochs=2)
    fit_with_loggers(tmp_path, [tb()], epochs=3, resume=2)
    assert [p.name for p in (tmp_path / "tb").iterdir()] == ["version_0"]
    acc = EventAccumulator(str(tmp_path / "tb" / "version_0"))
    acc.Reload()
    assert {"train/Accuracy", "valid/Accuracy", "train/Loss", "valid/Loss"} <= set(acc.Tags()["scalars"])
    assert [e.step for e in acc.Scalars("valid/Loss")] == [1, 2, 3]
    content = acc.PluginTagToContent("hparams")
    start = next(plugin_data_pb2.HParamsPluginData.FromString(v) for k, v in content.items()
                 if k.endswith("session_start_info"))
    assert start.session_start_info.hparams["git_commit"].string_value == "abc"
    assert start.session_start_info.hparams["model/hidden"].number_value == 8


class RowsLogger(OwnLogger):
    """Keeps the metrics it is sent, as `(metrics, step)` rows."""

    def __init__(self):
        super().__init__()
        self.rows = []

    def log_metrics(self, metrics, step=None):
        self.rows.append((dict(metrics), step))


def test_a_bridge_set_up_again_for_its_module_logs_each_epoch_once_and_skips_other_modules(tmp_path):
    """Lightning sets callbacks up once per `fit`/`validate` of one Trainer: the bridge listens to a
    StepModule's store once, and a plain LightningModule (no store) is no error."""
    rows = RowsLogger()
    trainer = bare_trainer(tmp_path, rows)
    module = StepModule(Classifier(), SgdConfig(), 0.1)
    bridge = tracking.MetricLoggerBridge()
    bridge.setup(trainer, module, "fit")
    bridge.setup(trainer, module, "validate")
    bridge.setup(trainer, L.LightningModule(), "fit")
    module.store.end_epoch(Split.VALID, 1, {"Loss": EpochEntry(0.5)})
    assert rows.rows == [({"valid/Loss": 0.5}, 1)]


def test_a_bridge_not_yet_set_up_saves_no_runs():
    assert tracking.MetricLoggerBridge().state_dict() == {"runs": []}


@pytest.mark.parametrize("every", [-1, 1.5, True, "2"])
def test_every_n_steps_must_be_a_non_negative_integer(every):
    with pytest.raises(ValueError, match=rf"^every_n_steps must be an integer >= 0 \(0: epoch values only\), "
                                         rf"got {re.escape(repr(every))}$"):
        tracking.MetricLoggerBridge(every_n_steps=every)


def test_tensorboard_gets_a_hyperparameter_of_no_scalar_type_as_its_text(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    logger = TensorBoardLogger(tmp_path, name="tb", version=0, default_hp_metric=False)
    tracking.log_hyperparams(logger, {"layers": [8, 4], "lr": 0.5})
    logger.experiment.flush()
    acc = EventAccumulator(str(tmp_path / "tb" / "version_0"))
    acc.Reload()
    start = next(plugin_data_pb2.HParamsPluginData.FromString(v) for k, v in acc.PluginTagToContent("hparams").items()
                 if k.endswith("session_start_info"))
    assert start.session_start_info.hparams["layers"].string_value == "[8, 4]"
    assert start.session_start_info.hparams["lr"].number_value == 0.5


class WandbLogger(OwnLogger):
    """Another package's logger that happens to share W&B's class name, with no run attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.saves = 0

    def save(self) -> None:
        self.saves += 1


def test_a_fit_ends_a_logger_named_like_wandbs_without_a_run_by_saving_it(tmp_path):
    own = WandbLogger()
    trainer = bare_trainer(tmp_path, own)
    bridge = tracking.MetricLoggerBridge()
    bridge.on_fit_end(trainer, None)  # type: ignore[arg-type]
    bridge.on_exception(trainer, None, RuntimeError("boom"))  # type: ignore[arg-type]
    assert own.saves == 2


class LostLogger(OwnLogger):
    """A logger whose service went away (a signal sent to every process of the job stops W&B's too)."""

    def save(self) -> None:
        raise ConnectionResetError("Connection lost")


def test_a_logger_that_cannot_end_its_run_leaves_the_fits_own_exception_and_the_other_loggers(tmp_path, caplog):
    lost, own = LostLogger(), WandbLogger()
    trainer = bare_trainer(tmp_path, [lost, own])
    bridge = tracking.MetricLoggerBridge()
    with caplog.at_level(logging.WARNING, "burnlike.train"):
        bridge.on_exception(trainer, None, SystemExit(143))  # type: ignore[arg-type]
    assert own.saves == 1
    assert "LostLogger could not end its run after the fit stopped (SystemExit): ConnectionResetError: Connection lost" \
        in caplog.text
    with pytest.raises(ConnectionResetError):  # a fit that ended well reports a logger that can't save
        bridge.on_fit_end(trainer, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("exception", "code"), [(SystemExit(143), 143), (RuntimeError("boom"), 1)])
def test_a_stopped_fit_ends_its_wandb_run_with_the_jobs_exit_status(tmp_path, monkeypatch, exception, code):
    """W&B shows a preempted run (128 + signal) or a failed one (1) as such, not as finished."""
    wandb = pytest.importorskip("wandb")
    from lightning.pytorch.loggers import WandbLogger

    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = WandbLogger(project="p", save_dir=str(tmp_path), offline=True)
    trainer = bare_trainer(tmp_path, logger)
    logger.experiment.log({"a": 1})  # the run starts
    tracking.MetricLoggerBridge().on_exception(trainer, None, exception)  # type: ignore[arg-type]
    # W&B's service writes the run's file out when it closes the run, after `finish` has returned:
    # its teardown waits until the service has closed every run and exited
    wandb.teardown()
    (path,) = (tmp_path / "wandb").glob("offline-run-*/*.wandb")
    exits = [r.exit.exit_code for r in wandb_records(path) if r.WhichOneof("record_type") == "exit"]
    assert exits == [code]
