"""Loggers: the metric store's epoch values and the hyperparameters reach each tool, read back by the
tool's own reader, and a resumed run appends to the same logger run."""

import csv
import json
import re
from pathlib import Path

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


# --- the app's logger group: each tool's own reader, and resume appending to the same run ----------

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from idx import write_mnist_idx

    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=64, n_test=32)


def app_run(tiny, run_dir, overrides):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from burnlike.app.run import run
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    conf = Path(__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("config", overrides=[f"data.root={tiny}", "model=mlp", "learner.progress_bar=false",
                                           "learner.summary=false", *overrides])
    GlobalHydra.instance().clear()
    return run(cfg, run_dir)


def test_app_mlflow_file_store_holds_epochs_config_and_resume_continues_the_run(tiny, tmp_path):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    app_run(tiny, tmp_path, ["logger=mlflow", "learner.num_epochs=1"])
    app_run(tiny, tmp_path, ["logger=mlflow", "learner.num_epochs=2", "learner.checkpoint=1"])
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").resolve().as_uri())
    experiment = client.get_experiment_by_name("burnlike")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1  # the resumed run continued the same MLflow run
    history = client.get_metric_history(runs[0].info.run_id, "valid/Accuracy")
    assert sorted(m.step for m in history) == [1, 2]
    params = runs[0].data.params
    assert params["config/learner/num_epochs"] == "1" and params["config/optimized_metric"] == "valid/Accuracy"
    assert "git_commit" in params


def test_app_wandb_offline_run_dir_holds_epochs_and_config(tiny, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    app_run(tiny, tmp_path, ["logger=wandb", "learner.num_epochs=1"])
    app_run(tiny, tmp_path, ["logger=wandb", "learner.num_epochs=2", "learner.checkpoint=1"])
    runs = sorted((tmp_path / "wandb").glob("offline-run-*"))
    assert runs, list((tmp_path / "wandb").iterdir())
    # offline-run-<date>_<time>-<id>, plus "-1" when both fits started in the same second
    ids = {re.fullmatch(r"offline-run-\d{8}_\d{6}-([a-z0-9]+)(-\d+)?", p.name)[1] for p in runs}
    assert len(ids) == 1  # the resumed fit continued the same W&B run id
    history, config = [], {}
    for run in runs:
        for record in wandb_records(next(run.glob("*.wandb"))):
            if record.WhichOneof("record_type") == "history":
                history.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item})
            elif record.WhichOneof("record_type") == "config":
                config.update({i.key: json.loads(i.value_json) for i in record.config.update})
    epochs = [h["trainer/global_step"] for h in history if "valid/Accuracy" in h]
    assert epochs == [1, 2]
    assert config["config"]["optimized_metric"] == "valid/Accuracy"


def wandb_records(path):
    """The protobuf records (wandb's own `Record` schema) of an offline run's `.wandb` file: a 7-byte
    header, then LevelDB-log blocks of 32 KiB whose chunks carry (crc32, length, type) headers."""
    import struct

    from wandb.proto import wandb_internal_pb2

    data, pos, block, pending = path.read_bytes(), 7, 32768, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk  # full/first, middle/last
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record
