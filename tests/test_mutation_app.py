"""The app's config reaches what it configures (issue 17's mutation sample of `burnlike.app`): the
CSV options reach the dataset, errors name their key and what was expected, Burn's execution
strategies pick Lightning's devices, git_commit reads a real checkout, wandb gets its project, and
the DDP child command keeps the job's config flags. Real Hydra composition, Lightning and git."""

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from idx import write_mnist_idx
from omegaconf import OmegaConf, open_dict
from torch import nn

from burnlike.app import ddp, run as app_run
from burnlike.app.data import DataConfigError, build_loaders
from burnlike.app.loggers import _wandb, git_commit
from burnlike.app.run import AppConfigError, build_model, check_devices, execution, is_rank_zero, trainer_strategy

CONF = Path(__file__).resolve().parents[1] / "conf"
SMALL = ["model=mlp", "model.hidden_sizes=[8]", "learner.progress_bar=false", "learner.summary=false",
         "learner.checkpointing=false"]
TABLE = ["model=tabular", "data=csv", "data.train=t.csv", "data.target=kind", "model.num_features=2",
         "model.num_outputs=2"]


@pytest.fixture(scope="module")
def conf():
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield lambda *overrides, **kw: compose("config", overrides=list(overrides), **kw)
    GlobalHydra.instance().clear()


def write_table(path: Path, delimiter: str = ",", n: int = 20) -> Path:
    rows = [delimiter.join(["a", "b", "kind"])]
    rows += [delimiter.join([f"{i / n:.3f}", f"{(i * 7 % n) / n:.3f}", "up" if i % 2 else "down"]) for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return path


# data=csv -----------------------------------------------------------------------------------------
def test_csv_delimiter_default_features_and_min_max_reach_the_dataset(conf, tmp_path):
    write_table(tmp_path / "t.csv", delimiter=";")
    train, valid = build_loaders(conf(*TABLE, f"data.root={tmp_path}", "data.delimiter=';'", "data.normalize=min_max"))
    assert (len(train.dataset), len(valid.dataset)) == (16, 4)
    inputs = torch.cat([b.inputs for b in train])
    assert inputs.shape == (16, 2)  # features: every column but the target
    assert inputs.min().item() == pytest.approx(0.0) and inputs.max().item() == pytest.approx(1.0)


def test_csv_normalize_names_its_choices(conf, tmp_path):
    write_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"^data.normalize='zscore': expected standard, min_max or null$"):
        build_loaders(conf(*TABLE, f"data.root={tmp_path}", "data.normalize=zscore"))


def test_csv_class_count_mismatch_names_the_classes(conf, tmp_path):
    write_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"model.num_outputs=3: the data has classes \['down', 'up'\]: "
                                              r"set model.num_outputs=2"):
        build_loaders(conf(*TABLE, f"data.root={tmp_path}", "model.num_outputs=3"))


def test_csv_split_error_counts_rows(conf, tmp_path):
    write_table(tmp_path / "t.csv")
    with pytest.raises(DataConfigError, match=r"^data.valid_fraction=0.01: splits the 20 rows into 20 to train and 0 "
                                              r"to validate; expected a fraction in \(0, 1\) that leaves both "
                                              r"non-empty \(or set data.valid\)$"):
        build_loaders(conf(*TABLE, f"data.root={tmp_path}", "data.valid_fraction=0.01"))


# data=mnist and unknown options -------------------------------------------------------------------
def test_missing_mnist_names_data_root(conf, tmp_path):
    root = tmp_path / "nowhere"
    with pytest.raises(DataConfigError, match=rf"^data.root='{root}': .*MNIST") as info:
        build_loaders(conf(*SMALL, f"data.root={root}"))
    assert "None" not in str(info.value)


def test_an_unknown_data_type_is_named():
    cfg = OmegaConf.create({"data": {"root": None}, "model": {"hidden_sizes": [8]}})
    with pytest.raises(DataConfigError, match=r"^data: dict is not a data option this app knows: expected one of "
                                              r"\['mnist', 'image_folder', 'csv'\]"):
        build_loaders(cfg)
