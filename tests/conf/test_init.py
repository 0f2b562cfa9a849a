"""`burnlike.conf`: the YAML options the app ships (model, data, optimizer, scheduler, trainer,
learner, debug, logger, hparams_search, experiment). The groups offer the documented options, and
each YAML holds only what its option changes: the defaults live in `burnlike.app.schema` alone, so a
YAML that repeats one (or sets a key the schema lacks) would drift from it unseen. An experiment
(lightning-hydra-template's: one file choosing the options of a recipe) sets only what its options
leave otherwise."""

import pytest
from omegaconf import OmegaConf

from burnlike.app.schema import SCHEMAS, AppConfig
from tests.helpers.app import GROUPS, shipped_options
from tests.helpers.paths import REPO

CONF_PKG = REPO / "burnlike" / "conf"
SCHEMA_FILES = sorted(p for p in CONF_PKG.rglob("*.yaml")  # not Hydra's own, nor the experiments (below)
                      if p.parent.name not in ("launcher", "experiment"))
EXPERIMENTS = sorted((CONF_PKG / "experiment").glob("*.yaml"))


def leaves(node, prefix=""):
    """`{dotted key: value}` of a plain dict tree (empty dicts and lists are values)."""
    out = {}
    for key, value in node.items():
        if isinstance(value, dict) and value:
            out.update(leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def own_values(path):
    """What a group YAML sets itself (not its defaults list, not Hydra's own settings)."""
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False) or {}
    return leaves({k: v for k, v in data.items() if k not in ("defaults", "hydra")})


def schema_for(path):
    """The schema defaults a YAML file lands on: AppConfig for the primary and `_global_` files, the
    group's node of it for data/trainer/learner, the `/schema/...@_here_` class for model/optimizer."""
    app = OmegaConf.to_container(OmegaConf.structured(AppConfig), resolve=False)
    group = path.parent.name
    if path.parent == CONF_PKG or "# @package _global_" in path.read_text():
        return leaves(app)
    defaults = OmegaConf.load(path).get("defaults", [])
    schema = [d[len("/schema/"):].split("@")[0] for d in defaults if isinstance(d, str) and d.startswith("/schema/")]
    if schema:
        return leaves(OmegaConf.to_container(OmegaConf.structured(SCHEMAS[schema[0]]), resolve=False))
    return leaves(app[group])


def test_shipped_config_groups_have_the_documented_options():
    assert shipped_options("model") == ["cnn", "gpt", "mlp", "mnist", "tabular"]
    assert shipped_options("data") == ["csv", "image_folder", "mnist", "shakespeare_char"]
    assert shipped_options("scheduler") == ["cosine", "warmup_cosine"]
    assert shipped_options("experiment") == ["shakespeare_char", "shakespeare_char_gpu"]
    assert GROUPS["optimizer"] == ["adagrad", "adam", "adamw", "adan", "lbfgs", "muon", "rmsprop", "sgd"]
    assert GROUPS["trainer"] == ["cpu", "ddp", "ddp_spawn", "default", "fsdp", "gpu"]
    assert shipped_options("hparams_search") == ["mnist_optuna"] and GROUPS["debug"][1:] == ["fast", "limit"]


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: str(p.relative_to(CONF_PKG)))
def test_group_yamls_hold_only_what_differs_from_the_schema(path):
    schema = schema_for(path)
    for key, value in own_values(path).items():
        where = f"{path.relative_to(REPO)}: {key}"
        assert key in schema, f"{where} is not in the schema (burnlike/app/schema.py)"
        assert schema[key] == "???" or schema[key] != value,\
            f"{where}: {value!r} repeats the schema's default; defaults live in burnlike/app/schema.py only"


def test_default_options_compose_to_the_schema_defaults_and_others_add_only_their_own(conf):
    app = leaves(OmegaConf.to_container(OmegaConf.structured(AppConfig), resolve=False))
    composed = leaves(OmegaConf.to_container(conf(), resolve=False))
    for key, default in app.items():  # model and optimizer are the groups' own schemas
        if not key.startswith(("model", "optimizer")):
            assert composed[key] == default, f"{key}: composes to {composed[key]!r}, the schema says {default!r}"
    for group in ("model", "data", "optimizer", "trainer", "learner"):
        for option in GROUPS[group]:
            path = CONF_PKG / group / f"{option}.yaml"
            expected = dict(schema_for(path))
            for parent in OmegaConf.load(path).get("defaults", []):  # same-group parents (trainer/cpu -> default)
                if isinstance(parent, str) and "/" not in parent and parent != "_self_":
                    expected.update(own_values(path.parent / f"{parent}.yaml"))
            expected.update(own_values(path))
            cfg = conf(f"{group}={option}")
            assert leaves(OmegaConf.to_container(cfg[group], resolve=False)) == expected, f"{group}={option}"


def experiment_choices(path):
    """The `override /group: option` entries of an experiment's defaults list, as overrides."""
    choices = []
    for entry in OmegaConf.load(path).defaults:
        (key, option), = dict(entry).items()
        assert key.startswith("override /"), f"{path.name}: {key} (an experiment overrides the app's options)"
        choices.append(f"{key[len('override /'):]}={option}")
    return choices


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_an_experiment_sets_only_what_its_options_leave_otherwise(conf, path):
    assert path.read_text().startswith("# @package _global_\n")
    chosen = leaves(OmegaConf.to_container(conf(*experiment_choices(path)), resolve=False))
    composed = leaves(OmegaConf.to_container(conf(f"experiment={path.stem}"), resolve=False))
    for key, value in own_values(path).items():
        where = f"{path.relative_to(REPO)}: {key}"
        parents = [key.rsplit(".", n)[0] for n in range(1, key.count(".") + 1)]
        unset = next((p for p in parents if p in chosen and chosen[p] is None), None)  # an optional config filled in
        assert key in chosen or unset, f"{where} is not a key of its options"
        assert unset or chosen[key] != value, f"{where}: {value!r} repeats what its options already set"
        assert composed[key] == value, where
