"""Fixtures shared below this folder."""

import json

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import open_dict

from burnlike.app.run import run
from tests.app.helpers import SMALL_pinned_app
from tests.helpers.idx import write_mnist_idx
from tests.helpers.paths import CONF, REPO


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=64, n_test=32)


@pytest.fixture(scope="module")
def hydra_conf():
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        yield lambda overrides: compose("config", overrides=overrides)
    GlobalHydra.instance().clear()


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
def app(tiny_app):
    """`app(out, *overrides)` → (returned value, result.json) of one in-process run into `out`."""
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        def go(out, *overrides):
            cfg = compose("config", overrides=[*SMALL_pinned_app, f"data.root={tiny_app}", *overrides])
            value = run(cfg, out)
            return value, json.loads((out / "result.json").read_text())

        yield go
    GlobalHydra.instance().clear()
