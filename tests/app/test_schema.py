"""TODO: docstring."""

from __future__ import annotations

from itertools import product

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf
from torch import nn

from burnlike.app.data import CsvDataConfig, DataConfig, ImageFolderDataConfig
from burnlike.app.run import (
    build_model,
    validate,
)
from burnlike.models.cnn import CnnConfig
from burnlike.models.mnist import ModelConfig
from burnlike.models.tabular import TabularMlpConfig
from burnlike.optim import AdamConfig
from tests.app.helpers import compose_app, compose_app_fast_path
from tests.helpers.app import GROUPS
from tests.helpers.paths import CONF

# Optimizers don't interact with the other groups: Burn's original three go through every combination,
# the later ones (adagrad, rmsprop, muon, adan, lbfgs) compose and step once each in test_burn_api.py.
COMBINED = {**GROUPS, "optimizer": ["adam", "adamw", "sgd"]}


@pytest.mark.parametrize("combo", list(product(*COMBINED.values())), ids=lambda c: "-".join(map(str, c)))
def test_every_shipped_combination_composes_to_valid_config_classes(app_hydra, combo):
    overrides = [f"{g}={o}" for g, o in zip(COMBINED, combo) if o is not None]
    cfg = compose("config", overrides=overrides)
    from burnlike.config import is_config

    validate(cfg)
    model, optimizer = OmegaConf.to_object(cfg.model), OmegaConf.to_object(cfg.optimizer)
    assert is_config(model) and callable(model.init)  # the @config classes themselves, not dicts
    assert is_config(optimizer) and callable(optimizer.init) and optimizer.lr > 0
    assert cfg.trainer.strategy in ("auto", "ddp", "ddp_spawn") and cfg.learner.num_epochs >= 1


def test_groups_default_to_burns_values():
    from burnlike.optim import AdamWConfig, SgdConfig

    cfg = compose_app([])
    assert OmegaConf.to_object(cfg.model) == ModelConfig(num_classes=10, hidden_size=512, dropout=0.5)
    assert cfg.data.batch_size == 64 and cfg.learner.recorder == "compact"
    for name, cls in (("adam", AdamConfig), ("adamw", AdamWConfig), ("sgd", SgdConfig)):
        opt = OmegaConf.to_object(compose_app([f"optimizer={name}"]).optimizer)
        burn = cls()
        for field in burn.__dataclass_fields__:
            assert getattr(opt, field) == getattr(burn, field), (name, field)


def test_typed_overrides_are_checked_at_compose():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="hidden_size"):
        compose_app(["model.hidden_size=abc"])
    with pytest.raises(ConfigCompositionException, match="hidden_sise"):
        compose_app(["model.hidden_sise=3"])
    with pytest.raises(ConfigCompositionException, match="beta_1"):
        compose_app(["optimizer.beta_1=fast"])
    with pytest.raises(ConfigCompositionException) as info:  # schemas are not options of a group
        compose_app(["model=mnist_schema"])
    options = str(info.value).split("Available options")[1].split("Config search path")[0]
    assert "mnist_schema" in str(info.value) and "mnist" in options and "schema" not in options


@pytest.mark.parametrize("name", ["adagrad", "rmsprop", "muon", "adan", "lbfgs"])
def test_app_optimizer_options_keep_burns_defaults_and_step(name):
    from omegaconf import OmegaConf

    from burnlike import optim

    cfg = compose_app([f"optimizer={name}", "model=mlp", f"optimizer.lr={0.5 if name == 'lbfgs' else 1e-3}"])
    validate(cfg)
    opt = OmegaConf.to_object(cfg.optimizer)
    burn = {"adagrad": optim.AdaGradConfig, "rmsprop": optim.RmsPropConfig, "muon": optim.MuonConfig,
            "adan": optim.AdanConfig, "lbfgs": optim.LBFGSConfig}[name]()
    for field in burn.__dataclass_fields__:
        if (name, field) != ("muon", "aux_adamw"):  # the app gives Muon an AdamW for biases and kernels
            want = getattr(burn, field)
            assert getattr(opt, field) == (list(want) if isinstance(want, tuple) else want), (name, field)
    model = build_model(cfg)
    torch_optim = opt.init().build([p for p in model.parameters() if p.requires_grad], cfg.optimizer.lr)
    before = model.output.weight.detach().clone()
    batch = torch.randn(4, 28, 28), torch.randint(0, 10, (4,))

    def closure():
        torch_optim.zero_grad()
        loss = nn.functional.cross_entropy(model(batch[0]), batch[1])
        loss.backward()
        return loss

    torch_optim.step(closure)
    assert not torch.equal(before, model.output.weight)


@pytest.mark.parametrize("optimizer", ["adam", "adamw", "sgd"])
@pytest.mark.parametrize(("model", "data", "model_type", "data_type"), [
    ("cnn", "image_folder", CnnConfig, ImageFolderDataConfig), ("tabular", "csv", TabularMlpConfig, CsvDataConfig),
    ("mnist", "mnist", None, DataConfig)])
def test_data_options_compose_with_their_models_and_every_optimizer(hydra_conf, optimizer, model, data, model_type, data_type):

    cfg = hydra_conf([f"model={model}", f"data={data}", f"optimizer={optimizer}"])
    validate(cfg)
    assert OmegaConf.get_type(cfg.data) is data_type and type(OmegaConf.to_object(cfg.data)) is data_type
    if model_type is not None:
        assert isinstance(OmegaConf.to_object(cfg.model), model_type)


def test_default_data_option_is_mnist_with_its_four_keys(hydra_conf):
    cfg = hydra_conf([])
    assert OmegaConf.get_type(cfg.data) is DataConfig and cfg.model.hidden_size == 512
    assert sorted(cfg.data.keys()) == ["batch_size", "num_workers", "root", "shuffle_seed"]


def test_the_guide_command_composes_to_the_auto_device_and_trainer_cpu_forces_the_cpu():
    cfg = compose_app_fast_path(["model=mnist", "trainer.devices=1"])
    assert cfg.trainer.accelerator == "auto" and cfg.trainer.devices == 1
    assert cfg.learner.cuda_graph is False
    assert compose_app_fast_path(["trainer=cpu"]).trainer.accelerator == "cpu"
    assert compose_app_fast_path(["learner.cuda_graph=true"]).learner.cuda_graph is True


def test_the_sweep_direction_resolver_is_registered_under_its_documented_name():
    from burnlike.app.schema import register_configs

    register_configs()
    assert OmegaConf.has_resolver("burnlike.sweep_direction")
    assert OmegaConf.create({"d": "${burnlike.sweep_direction:valid/Loss}"}).d == "minimize"


def test_register_configs_stores_every_schema_and_the_resolver_from_scratch(monkeypatch):
    """On a store without them (every other test composes after conftest already registered them)."""

    from hydra import compose
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from burnlike.app.schema import SCHEMAS, register_configs

    repo = ConfigStore.instance().repo
    monkeypatch.delitem(repo, "schema", raising=False)
    OmegaConf.clear_resolver("burnlike.sweep_direction")
    register_configs()
    for path in SCHEMAS:  # schema/<group>/<name>.yaml, and schema/app.yaml
        *groups, name = ["schema", *path.split("/")]
        node = repo
        for group in groups:
            node = node[group]
        assert f"{name}.yaml" in node, path
    assert "app.yaml" in repo["schema"] and "mnist.yaml" not in repo["schema"]
    assert OmegaConf.create({"m": "valid/Loss", "d": "${burnlike.sweep_direction:${m}}"}).d == "minimize"
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["model=tabular", "data=csv", "optimizer=lbfgs"])
    GlobalHydra.instance().clear()
    assert cfg.model.num_features is not None and cfg.data.delimiter == "," and "history_size" in cfg.optimizer
