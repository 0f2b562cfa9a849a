"""The app's config as `train.py` composes it, and the options it ships."""

from __future__ import annotations

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from tests.helpers.paths import CONF, REPO


def compose_app(overrides, hydra_config=False, config_dir=CONF):
    """The config composed from `config_dir` (the app's conf/ by default) with `overrides`."""
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=hydra_config)


def shipped_options(group):
    """The options burnlike ships for config group `group` (burnlike/conf/<group>/*.yaml), sorted."""
    return sorted(p.stem for p in (REPO / "burnlike" / "conf" / group).glob("*.yaml"))


# config group -> the options a test composes in every combination
GROUPS = {g: shipped_options(g) for g in ("model", "data", "optimizer", "trainer", "learner")}
GROUPS["debug"] = [None, *shipped_options("debug")]
# the MNIST options in every combination; the other data options and their models: tests/app/test_data.py
GROUPS["model"], GROUPS["data"] = ["mlp", "mnist"], ["mnist"]


# the overrides of a small image-folder run (the CNN on 3 classes)
IMAGE = ["model=cnn", "data=image_folder", "model.num_classes=3", "learner.progress_bar=false"]
