"""The app's config keys take effect (issue 17): each run composes the shipped config with Hydra and
calls `burnlike.app.run.run` in this process, on tiny IDX files (tests/idx.py) and a small MLP."""

import json
import math
import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from idx import write_mnist_idx

from burnlike.app.run import AppConfigError, run
from burnlike.models.mlp import MlpConfig
from burnlike.record import BinGzFileRecorder
from burnlike.train.logger import read_epochs

CONF = Path(__file__).resolve().parents[1] / "conf"
SMALL = ["model=mlp", "model.hidden_sizes=[32]", "learner.progress_bar=false", "learner.summary=false",
         "learner.checkpointing=false"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=256, n_test=128)


@pytest.fixture(scope="module")
def app(tiny):
    """`app(out, *overrides)` → (returned value, result.json) of one in-process run into `out`."""
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        def go(out, *overrides):
            cfg = compose("config", overrides=[*SMALL, f"data.root={tiny}", *overrides])
            value = run(cfg, out)
            return value, json.loads((out / "result.json").read_text())

        yield go
    GlobalHydra.instance().clear()


@pytest.mark.parametrize(("patience", "epochs"), [(1, 2), (2, 3)])
def test_early_stopping_patience_stops_the_run(app, tmp_path, patience, epochs):
    # lr 1e-30: the weights can't move, so the valid loss never strictly improves after epoch 1
    _, result = app(tmp_path, "optimizer=sgd", "optimizer.lr=1e-30", "learner.num_epochs=5",
                    "optimized_metric=valid/Loss", f"learner.early_stopping_patience={patience}")
    assert len(set(result["epochs"].values())) == 1  # the premise: a flat validation loss
    assert list(result["epochs"]) == [str(e) for e in range(1, epochs + 1)]
    assert sorted(p.name for p in (tmp_path / "valid").iterdir()) == [f"epoch-{e}" for e in range(1, epochs + 1)]


def first_epoch_losses(app, out, seed):
    app(out, "learner.num_epochs=1", f"data.shuffle_seed={seed}", "seed=0")
    return (out / "train" / "epoch-1" / "Loss.log").read_text().splitlines()


def test_shuffle_seed_sets_the_training_order(app, tmp_path):
    # same model seed: the first batch's loss differs only if the first batch holds other digits
    one = first_epoch_losses(app, tmp_path / "a", 1)
    again = first_epoch_losses(app, tmp_path / "b", 1)
    other = first_epoch_losses(app, tmp_path / "c", 2)
    assert len(one) == 4 and one == again
    assert one[0] != other[0]


def test_optimized_valid_loss_is_the_minimum_over_epochs(app, tmp_path):
    value, result = app(tmp_path, "optimized_metric=valid/Loss", "learner.num_epochs=3", "optimizer.lr=0.003")
    epochs = {int(e): v for e, v in result["epochs"].items()}
    assert list(epochs) == [1, 2, 3] and max(epochs.values()) > min(epochs.values())
    assert value == result["value"] == min(epochs.values())
    assert result["mode"] == "min" and epochs[result["best_epoch"]] == value
    logged = read_epochs(tmp_path, "valid", "Loss")  # what the Burn-layout logs hold
    assert logged == pytest.approx(epochs, rel=1e-6)


def test_optimized_accuracy_is_the_maximum_over_epochs(app, tmp_path):
    value, result = app(tmp_path, "learner.num_epochs=2", "optimizer.lr=0.0003")
    epochs = {int(e): v for e, v in result["epochs"].items()}
    assert list(epochs) == [1, 2] and epochs[1] != epochs[2]
    assert value == result["value"] == max(epochs.values()) and result["mode"] == "max"
    assert epochs == pytest.approx(read_epochs(tmp_path, "valid", "Accuracy"), rel=1e-6)
    assert all(math.isclose(v * 1.28, round(v * 1.28), abs_tol=1e-9) for v in epochs.values())  # k of 128


def dtypes(item) -> list[str]:
    if isinstance(item, dict):
        if "dtype" in item:
            return [item["dtype"]]
        return [d for v in item.values() for d in dtypes(v)]
    if isinstance(item, list):
        return [d for v in item for d in dtypes(v)]
    return []


def test_bin_gz_recorder_writes_half_precision(app, tmp_path):
    app(tmp_path, "learner.recorder=bin_gz", "learner.checkpointing=true", "learner.num_epochs=1")
    model = MlpConfig(hidden_sizes=[32]).init()
    metadata, item = BinGzFileRecorder().read_record(tmp_path / "model.bin.gz", module=model)
    assert metadata["float"] == "half::binary16::f16" and metadata["settings"] == "HalfPrecisionSettings"
    assert metadata["format"].startswith("burn_core::record::file::BinGzFileRecorder<")
    assert dtypes(item) == ["F16"] * 4  # two Linear layers: weight and bias each
    # Burn's per-epoch layout: checkpoint/model-N is a plain module record at the recorder's precision
    _, epoch_item = BinGzFileRecorder().read_record(tmp_path / "checkpoint" / "model-1.bin.gz",
                                                    module=MlpConfig(hidden_sizes=[32]).init())
    assert dtypes(epoch_item) == ["F16"] * 4


@pytest.mark.parametrize("summary", [True, False])
def test_learner_summary_prints_burns_table_or_nothing(app, tmp_path, capsys, summary):
    app(tmp_path, "learner.num_epochs=1", f"learner.summary={str(summary).lower()}")
    out = capsys.readouterr().out
    assert ("Learner Summary" in out) is summary
    assert ("| Valid | Accuracy |" in out) is summary


@pytest.mark.parametrize(("override", "key"), [("learner.early_stopping_patience=0", "learner.early_stopping_patience"),
                                               ("learner.early_stopping_patience=-1", "learner.early_stopping_patience"),
                                               ("data.num_workers=-1", "data.num_workers")])
def test_bad_values_are_refused_naming_the_key(app, tmp_path, override, key):
    with pytest.raises(AppConfigError, match=re.escape(f"{key}=") + r"-?\d+ is invalid"):
        app(tmp_path, "learner.num_epochs=1", override)
    assert not (tmp_path / "train").exists()  # refused before training started
