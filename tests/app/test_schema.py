"""`burnlike.app.schema`: the structured configs behind the app's YAML options. They hold Burn's
defaults (the optimizers' and models' `@config` classes themselves), type-check every override at
compose time with the key named, and `register_configs` stores them (and the sweep-direction
resolver) where the options' YAML finds them. What the YAML files themselves hold:
tests/conf/test_init.py."""

from __future__ import annotations

from itertools import product

import pytest
import torch
from hydra.core.config_store import ConfigStore
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from torch import nn

from burnlike import optim
from burnlike.app.data import CsvDataConfig, DataConfig, ImageFolderDataConfig
from burnlike.app.run import build_model, validate
from burnlike.app.schema import SCHEMAS, register_configs
from burnlike.config import is_config
from burnlike.models.cnn import CnnConfig
from burnlike.models.mnist import ModelConfig
from burnlike.models.tabular import TabularMlpConfig
from tests.helpers.app import GROUPS

# Optimizers don't interact with the other groups: Burn's original three go through every combination,
# the later ones (adagrad, rmsprop, muon, adan, lbfgs) compose and step once each
# (test_app_optimizer_options_keep_burns_defaults_and_step).
COMBINED = {**GROUPS, "optimizer": ["adam", "adamw", "sgd"]}


# --- registration ---------------------------------------------------------------------------------
def test_register_configs_stores_every_schema_and_the_resolver_from_scratch(conf, monkeypatch):
    """On a store without them (every other test composes after conftest already registered them)."""
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
    cfg = conf("model=tabular", "data=csv", "optimizer=lbfgs")
    assert cfg.model.num_features is not None and cfg.data.delimiter == "," and "history_size" in cfg.optimizer


# --- typed overrides ------------------------------------------------------------------------------
def test_typed_overrides_are_checked_at_compose(conf):
    with pytest.raises(ConfigCompositionException, match="hidden_size"):
        conf("model.hidden_size=abc")
    with pytest.raises(ConfigCompositionException, match="hidden_sise"):
        conf("model.hidden_sise=3")
    with pytest.raises(ConfigCompositionException, match="beta_1"):
        conf("optimizer.beta_1=fast")
    with pytest.raises(ConfigCompositionException) as info:  # schemas are not options of a group
        conf("model=mnist_schema")
    options = str(info.value).split("Available options")[1].split("Config search path")[0]
    assert "mnist_schema" in str(info.value) and "mnist" in options and "schema" not in options


# --- defaults -------------------------------------------------------------------------------------
def test_groups_default_to_burns_values(conf):
    cfg = conf()
    assert OmegaConf.to_object(cfg.model) == ModelConfig(num_classes=10, hidden_size=512, dropout=0.5)
    assert cfg.data.batch_size == 64 and cfg.learner.recorder == "compact"
    for name, cls in (("adam", optim.AdamConfig), ("adamw", optim.AdamWConfig), ("sgd", optim.SgdConfig)):
        opt = OmegaConf.to_object(conf(f"optimizer={name}").optimizer)
        burn = cls()
        for field in burn.__dataclass_fields__:
            assert getattr(opt, field) == getattr(burn, field), (name, field)


def test_default_data_option_is_mnist_with_its_four_keys(conf):
    cfg = conf()
    assert OmegaConf.get_type(cfg.data) is DataConfig and cfg.model.hidden_size == 512
    assert sorted(cfg.data.keys()) == ["batch_size", "num_workers", "root", "shuffle_seed"]


def test_the_guide_command_composes_to_the_auto_device_and_trainer_cpu_forces_the_cpu(conf):
    cfg = conf("model=mnist", "trainer.devices=1")
    assert cfg.trainer.accelerator == "auto" and cfg.trainer.devices == 1
    assert cfg.learner.cuda_graph is False
    assert conf("trainer=cpu").trainer.accelerator == "cpu"
    assert conf("learner.cuda_graph=true").learner.cuda_graph is True


# --- the shipped options compose to the schemas' classes ------------------------------------------
@pytest.mark.parametrize("combo", list(product(*COMBINED.values())), ids=lambda c: "-".join(map(str, c)))
def test_every_shipped_combination_composes_to_valid_config_classes(conf, combo):
    cfg = conf(*(f"{g}={o}" for g, o in zip(COMBINED, combo) if o is not None))
    validate(cfg)
    model, optimizer = OmegaConf.to_object(cfg.model), OmegaConf.to_object(cfg.optimizer)
    assert is_config(model) and callable(model.init)  # the @config classes themselves, not dicts
    assert is_config(optimizer) and callable(optimizer.init) and optimizer.lr > 0
    assert cfg.trainer.strategy in ("auto", "ddp", "ddp_spawn", "fsdp") and cfg.learner.num_epochs >= 1


@pytest.mark.parametrize("optimizer", ["adam", "adamw", "sgd"])
@pytest.mark.parametrize(("model", "data", "model_type", "data_type"), [
    ("cnn", "image_folder", CnnConfig, ImageFolderDataConfig), ("tabular", "csv", TabularMlpConfig, CsvDataConfig),
    ("mnist", "mnist", None, DataConfig)])
def test_data_options_compose_with_their_models_and_every_optimizer(conf, optimizer, model, data, model_type,
                                                                    data_type):
    cfg = conf(f"model={model}", f"data={data}", f"optimizer={optimizer}")
    validate(cfg)
    assert OmegaConf.get_type(cfg.data) is data_type and type(OmegaConf.to_object(cfg.data)) is data_type
    if model_type is not None:
        assert isinstance(OmegaConf.to_object(cfg.model), model_type)


@pytest.mark.parametrize("name", ["adagrad", "rmsprop", "muon", "adan", "lbfgs"])
def test_app_optimizer_options_keep_burns_defaults_and_step(conf, name):
    cfg = conf(f"optimizer={name}", "model=mlp", f"optimizer.lr={0.5 if name == 'lbfgs' else 1e-3}")
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
