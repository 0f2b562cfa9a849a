"""TODO: docstring."""

from __future__ import annotations

import csv
import gc
import logging
import warnings

import lightning as L
import pytest
from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger

from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import CompactRecorder, DefaultRecorder
from burnlike.train import (
    LearnerBuilder,
    tracking,
)
from burnlike.train.metric import AccuracyMetric, LossMetric
from burnlike.train.tracking import continue_logger_runs, continue_run
from tests.helpers.toy import (
    Classifier,
    loader,
)
from tests.train.helpers import messages, write_checkpoint


@pytest.fixture(autouse=True)
def own_resume_notes(monkeypatch):
    """Each test starts with empty resume notes of the containers' own kind."""
    monkeypatch.setattr(tracking, "_CONTINUED", type(tracking._CONTINUED)())
    monkeypatch.setattr(tracking, "_PREVIOUS_ROWS", type(tracking._PREVIOUS_ROWS)())


def messages_of(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "burnlike.train"]


class OwnLogger(Logger):
    name = "own"
    version = "v1"

    def log_metrics(self, metrics, step=None):
        pass

    def log_hyperparams(self, params, *args, **kwargs):
        pass


def fit(tmp_path, loggers, epochs=2, resume=None, every_n_steps=0):
    b = (LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).num_epochs(epochs).progress_bar(False)
         .with_file_checkpointer(CompactRecorder())
         .with_logger(*loggers, every_n_steps=every_n_steps, hyperparams={"model": {"hidden": 8}, "git_commit": "abc"}))
    if resume is not None:
        b = b.checkpoint(resume)
    return b.build(Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16))


def test_a_logger_that_never_trained_leaves_no_resume_note(tmp_path):
    """Notes go with their logger: with id() keys, a later logger at the same address looked continued."""
    from lightning.pytorch.loggers import CSVLogger

    logger = CSVLogger(tmp_path, name="r", version=0)
    tracking.continue_run(logger, {"kind": "CSVLogger", "version": 0})
    assert logger in tracking._CONTINUED and logger in tracking._PREVIOUS_ROWS
    del logger
    gc.collect()
    assert len(tracking._CONTINUED) == 0 and len(tracking._PREVIOUS_ROWS) == 0


def test_continue_run_refuses_another_kind_a_missing_version_and_a_started_run(tmp_path, caplog):
    csv = CSVLogger(tmp_path)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        continue_run(csv, {"kind": "TensorBoardLogger", "version": 3})
        continue_run(csv, {"kind": "CSVLogger", "version": None})
        assert csv.experiment is not None  # its run starts: too late to point it elsewhere
        continue_run(csv, {"kind": "CSVLogger", "version": 7})
    assert messages_of(caplog) == [
        "resume: logger CSVLogger is not the checkpoint's (TensorBoardLogger); it starts a new run",
        "resume: logger CSVLogger is not the checkpoint's (CSVLogger); it starts a new run",
        "resume: CSVLogger already started a run; it can't continue run 7"]
    assert csv.version == 0


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


def test_continue_run_says_which_loggers_it_cannot_continue_and_which_it_does(tmp_path, caplog):
    board = TensorBoardLogger(tmp_path)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        continue_run(OwnLogger(), {"kind": "OwnLogger", "version": "v0"})
        continue_run(board, {"kind": "TensorBoardLogger", "version": 5})
    assert messages_of(caplog) == ["resume: burnlike can't continue a OwnLogger run; it starts a new one",
                                   "resume: TensorBoardLogger continues run 5"]
    assert board.version == 5


def test_continuing_a_csv_run_silences_only_lightnings_existing_directory_warning(tmp_path):
    csv = CSVLogger(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        continue_run(csv, {"kind": "CSVLogger", "version": 0})
        warnings.warn(f"Experiment logs directory {csv.log_dir} exists and is not empty.", UserWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["something else"]


def test_continuing_a_wandb_run_resumes_it_by_id(tmp_path):
    pytest.importorskip("wandb")
    from lightning.pytorch.loggers import WandbLogger

    logger = WandbLogger(save_dir=str(tmp_path), offline=True, project="p")
    continue_run(logger, {"kind": "WandbLogger", "version": "run42"})
    assert logger.version == "run42"
    assert logger._wandb_init["id"] == "run42" and logger._wandb_init["resume"] == "allow"  # what wandb.init gets


def test_a_continued_logger_is_named_when_it_keeps_its_runs_hyperparameters(tmp_path, caplog):
    import lightning as L
    from lightning.pytorch.loggers import CSVLogger

    from burnlike.train import tracking

    logger = CSVLogger(tmp_path, name="r", version=0)
    tracking.continue_run(logger, {"kind": "CSVLogger", "version": 0})
    trainer = L.Trainer(logger=logger, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        tracking.MetricLoggerBridge(hyperparams={"lr": 0.1}).on_fit_start(trainer, None)  # type: ignore[arg-type]
    assert "resume: CSVLogger keeps the hyperparameters its run started with" in [r.getMessage() for r in caplog.records]


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
    assert messages(caplog) == ["resume: CSVLogger continues run 3", "resume: TensorBoardLogger continues run 5"]


def test_continue_run_resumes_a_wandb_run_by_id(tmp_path):
    pytest.importorskip("wandb")
    wandb = pytest.importorskip("lightning.pytorch.loggers").WandbLogger(offline=True, save_dir=str(tmp_path))
    continue_run(wandb, {"kind": "WandbLogger", "version": "run-7"})
    assert wandb._id == "run-7" and wandb._wandb_init["id"] == "run-7" and wandb._wandb_init["resume"] == "allow"


def test_continue_run_says_why_a_logger_starts_a_new_run(tmp_path, caplog):
    csv = CSVLogger(tmp_path / "csv")
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        continue_run(csv, {"kind": "TensorBoardLogger", "version": 3})  # another kind
        continue_run(csv, {"kind": "CSVLogger"})  # no version
        continue_run(OwnLogger(), {"kind": "OwnLogger", "version": 1})
        csv.experiment  # noqa: B018  (starts its run)
        continue_run(csv, {"kind": "CSVLogger", "version": 3})
    assert csv.version == 0
    assert messages(caplog) == [
        "resume: logger CSVLogger is not the checkpoint's (TensorBoardLogger); it starts a new run",
        "resume: logger CSVLogger is not the checkpoint's (CSVLogger); it starts a new run",
        "resume: burnlike can't continue a OwnLogger run; it starts a new one",
        "resume: CSVLogger already started a run; it can't continue run 3",
    ]


def test_csv_logger_gets_epochs_under_burns_names_and_resume_appends(tmp_path):
    fit(tmp_path, [CSVLogger(tmp_path, name="csv")], epochs=2, every_n_steps=2)
    fit(tmp_path, [CSVLogger(tmp_path, name="csv")], epochs=3, resume=2)
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
    from lightning.pytorch.loggers import TensorBoardLogger
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    def tb():
        return TensorBoardLogger(tmp_path, name="tb", default_hp_metric=False)

    fit(tmp_path, [tb()], epochs=2)
    fit(tmp_path, [tb()], epochs=3, resume=2)
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
