"""Loggers: the metric store's epoch values and the hyperparameters reach each tool, read back by the
tool's own reader, and a resumed run appends to the same logger run."""

import csv

import pytest
from lightning.pytorch.loggers import CSVLogger
from toy import Classifier, loader

from burnlike.optim import AdamConfig
from burnlike.record import CompactRecorder
from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric, LossMetric


def fit(tmp_path, loggers, epochs=2, resume=None, every_n_steps=0):
    b = (LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).num_epochs(epochs).progress_bar(False)
         .with_file_checkpointer(CompactRecorder())
         .with_logger(*loggers, every_n_steps=every_n_steps, hyperparams={"model": {"hidden": 8}, "git_commit": "abc"}))
    if resume is not None:
        b = b.checkpoint(resume)
    return b.build(Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16))


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
