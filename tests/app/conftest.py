"""Fixtures of the `burnlike.app` tests: small MNIST files (`data`), the app's config for an MLP on
them (`mlp_conf`), a multirun job's HydraConfig (`multirun`), and `app`, one in-process run of the
app with its result.json. All compose through the `conf` fixture (tests/conftest.py): one Hydra
initialisation per test module."""

import json

import pytest
from hydra.core.hydra_config import HydraConfig
from omegaconf import open_dict

from burnlike.app.run import run
from tests.app.helpers import APP_HIDDEN_SIZE, quiet_mlp
from tests.helpers.idx import write_mnist_idx


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """MNIST files of 64 train and 32 test images."""
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=64, n_test=32)


@pytest.fixture(scope="module")
def mlp_conf(conf, data):
    """`mlp_conf(*overrides, hydra_config=False)`: the app's config for an MLP on `data`, without a
    progress bar (with Hydra's own node when `hydra_config`)."""
    def compose(*overrides, hydra_config=False):
        return conf("model=mlp", f"data.root={data}", "learner.progress_bar=false", *overrides,
                    return_hydra_config=hydra_config)

    return compose


@pytest.fixture
def multirun(conf, tmp_path):
    """HydraConfig as a multirun job sees it (the job's overrides, its output dir)."""
    cfg = conf("learner.num_epochs=2", return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.mode = "MULTIRUN"
        cfg.hydra.runtime.output_dir = str(tmp_path / "job0")
        cfg.hydra.runtime.cwd = str(tmp_path)
    HydraConfig.instance().set_config(cfg)
    yield cfg
    HydraConfig.instance().cfg = None


@pytest.fixture(scope="module")
def app(conf, tiny_app):
    """`app(out, *overrides)` → (returned value, result.json) of one in-process run into `out` (an MLP
    of `APP_HIDDEN_SIZE` units on 256 train and 128 test images)."""
    def go(out, *overrides):
        value = run(conf(*quiet_mlp(APP_HIDDEN_SIZE), f"data.root={tiny_app}", *overrides), out)
        return value, json.loads((out / "result.json").read_text())

    return go
