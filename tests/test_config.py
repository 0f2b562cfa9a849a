"""`burnlike.config`: Burn's `#[derive(Config)]` as a decorator. A `@config` class fills defaults,
has copying `with_*` setters and `new`, saves JSON in Burn's key order (required, then optional,
then defaulted fields), loads it back naming the bad key and the file, and is a Hydra structured
config."""

import json

import pytest
from omegaconf import OmegaConf, ValidationError

from burnlike.config import ConfigError, config
from burnlike.optim import AdamConfig


@config
class Inner:
    num_classes: int
    hidden_size: int
    dropout: float = 0.5


@config
class Training:
    model: Inner
    optimizer: AdamConfig
    note: str | None
    num_epochs: int = 10
    learning_rate: float = 1.0e-4


def training() -> Training:
    return Training(Inner(10, 512), AdamConfig())


def test_config_fills_defaults_and_options_and_with_setters_copy():
    cfg = training()
    assert cfg.num_epochs == 10 and cfg.note is None and cfg.model.dropout == 0.5
    other = cfg.with_num_epochs(3)
    assert other.num_epochs == 3 and cfg.num_epochs == 10  # a copy, like Burn's owned setters
    assert Training.new(Inner(1, 2), AdamConfig()).model.hidden_size == 2
    with pytest.raises(AttributeError):
        cfg.with_nope(1)


def test_nested_config_defaults_are_not_shared():
    @config
    class Holder:
        optimizer: AdamConfig = AdamConfig()

    a, b = Holder(), Holder()
    a.optimizer.beta_1 = 0.5
    assert b.optimizer.beta_1 == 0.9


def test_config_is_a_hydra_structured_config():
    node = OmegaConf.structured(training())
    assert node.model.hidden_size == 512
    with pytest.raises(ValidationError):
        node.num_epochs = "many"


def test_save_uses_burn_key_order_and_round_trips(tmp_path):
    cfg = training()
    path = tmp_path / "config.json"
    cfg.save(path)
    data = json.loads(path.read_text())
    # Burn's order: required, then Option, then defaulted fields.
    assert list(data) == ["model", "optimizer", "note", "num_epochs", "learning_rate"]
    assert list(data["optimizer"])[:2] == ["weight_decay", "grad_clipping"]
    assert data["optimizer"]["epsilon"] == 1e-5
    assert Training.load(path) == cfg


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d.update(num_epochs="ten"), "num_epochs"),
        (lambda d: d["model"].pop("num_classes"), "model.num_classes"),
        (lambda d: d["model"].update(typo=1), "model.typo"),
        (lambda d: d.update(optimizer=[1]), "optimizer"),
    ],
)
def test_load_errors_name_the_key(tmp_path, mutate, needle):
    path = tmp_path / "config.json"
    training().save(path)
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")) as err:
        Training.load(path)
    assert str(path) in str(err.value)


def test_load_reports_a_missing_file_or_invalid_json(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        Training.load(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        Training.load(tmp_path / "bad.json")
