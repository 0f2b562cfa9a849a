"""`burnlike.config`: Burn's `#[derive(Config)]` as a decorator. A `@config` class fills defaults,
has copying `with_*` setters and `new`, saves JSON in Burn's key order (required, then optional,
then defaulted fields), loads it back naming the bad key and the file, and is a Hydra structured
config. Burn's enums keep serde's JSON shape both ways (`{"Norm": 1.0}`, `{"Fixed": 256}`), so a
config file Burn wrote loads and one burnlike saves is Burn's."""

import json

import pytest
from omegaconf import OmegaConf, ValidationError

from burnlike.config import ConfigError, config
from burnlike.data import SeqLengthOption
from burnlike.optim import (
    AdamConfig,
    AdjustLrFn,
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    GradientClippingConfig,
    LinearLrSchedulerConfig,
    MuonConfig,
    SchedulerReduction,
    SgdConfig,
    WeightDecayConfig,
)


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


# --- Burn's JSON: serde's enum shape ------------------------------------------------------------------
@config
class BurnTraining:
    optimizer: AdamConfig
    sgd: SgdConfig
    lr_scheduler: CosineAnnealingLrSchedulerConfig
    schedule: ComposedLrSchedulerConfig
    muon: MuonConfig
    seq_length: SeqLengthOption
    num_epochs: int = 10
    batch_size: int = 64


# What Burn 0.21 writes for that config (serde_json, `Config::save`): Option fields are null or the
# value, `GradientClippingConfig` (burn-optim grad_clipping/base.rs) and `SeqLengthOption` (burn-nn
# modules/attention/mask.rs) are externally tagged enums, `ComposedLrSchedulerConfig`'s schedulers a
# list of tagged `LrSchedulerConfig`s (lr_scheduler/composed.rs), unit variants their names.
BURN_WRITTEN = """{
  "optimizer": {
    "beta_1": 0.9,
    "beta_2": 0.999,
    "epsilon": 1e-5,
    "amsgrad": false,
    "weight_decay": {"penalty": 0.0001},
    "grad_clipping": {"Norm": 1.0}
  },
  "sgd": {
    "weight_decay": null,
    "momentum": {"momentum": 0.9, "dampening": 0.1, "nesterov": true},
    "gradient_clipping": {"Value": 0.5}
  },
  "lr_scheduler": {"initial_lr": 0.01, "min_lr": 0.0001, "num_iters": 1000},
  "schedule": {
    "schedulers": [{"Linear": {"initial_lr": 0.0, "final_lr": 0.001, "num_iters": 100}},
                   {"Cosine": {"initial_lr": 1.0, "min_lr": 0.0, "num_iters": 900}}],
    "reduction": "Prod"
  },
  "muon": {
    "weight_decay": null,
    "momentum": {"momentum": 0.95, "dampening": 0.0, "nesterov": true},
    "ns_coefficients": [3.4445, -4.775, 2.0315],
    "epsilon": 1e-7,
    "ns_steps": 5,
    "adjust_lr_fn": "MatchRmsAdamW"
  },
  "seq_length": {"Fixed": 256},
  "num_epochs": 10,
  "batch_size": 64
}
"""


def test_a_burn_written_config_with_clipping_an_optimizer_and_schedulers_loads(tmp_path):
    """Acceptance (issue 32, point 3): Burn's JSON for grad clipping (`{"Norm": 1.0}`,
    burn-optim/src/grad_clipping/base.rs), an optimizer, LR schedulers (lr_scheduler/cosine.rs,
    composed.rs) and `SeqLengthOption::Fixed(256)` (burn-nn/src/modules/attention/mask.rs) loads into
    the same configs, enums as enum members."""
    path = tmp_path / "config.json"
    path.write_text(BURN_WRITTEN)
    cfg = BurnTraining.load(path)
    assert cfg.optimizer.grad_clipping == GradientClippingConfig.Norm(1.0)
    assert cfg.optimizer.weight_decay == WeightDecayConfig(0.0001)
    assert cfg.sgd.gradient_clipping == GradientClippingConfig.Value(0.5) and cfg.sgd.momentum.nesterov
    assert cfg.lr_scheduler == CosineAnnealingLrSchedulerConfig(0.01, 1000, min_lr=0.0001)
    assert cfg.schedule == ComposedLrSchedulerConfig([LinearLrSchedulerConfig(0.0, 0.001, 100),
                                                      CosineAnnealingLrSchedulerConfig(1.0, 900)])
    assert cfg.schedule.reduction is SchedulerReduction.PROD
    assert cfg.muon.adjust_lr_fn is AdjustLrFn.MATCH_RMS_ADAMW and cfg.muon.ns_coefficients == (3.4445, -4.775, 2.0315)
    assert cfg.seq_length == SeqLengthOption.Fixed(256)
    assert cfg.lr_scheduler.init().step() == 0.01 and cfg.optimizer.init().grad_clipping.threshold == 1.0


def test_burnlike_saves_burns_json_shape_and_reads_it_back(tmp_path):
    """The saved JSON has Burn's shape: the same object as Burn's (key for key, value for value)."""
    path = tmp_path / "config.json"
    path.write_text(BURN_WRITTEN)
    cfg = BurnTraining.load(path)
    cfg.save(tmp_path / "saved.json")
    saved = json.loads((tmp_path / "saved.json").read_text())
    assert saved == json.loads(BURN_WRITTEN)
    assert saved["optimizer"]["grad_clipping"] == {"Norm": 1.0} and saved["seq_length"] == {"Fixed": 256}
    assert BurnTraining.load(tmp_path / "saved.json") == cfg
    assert SeqLengthOption.NoMax.serde_value() == "NoMax" and SeqLengthOption.from_serde("NoMax") is SeqLengthOption.NoMax
    assert SeqLengthOption.Max(8).serde_value() == {"Max": 8}
    assert AdamConfig().to_dict()["grad_clipping"] is None


@pytest.mark.parametrize(("clipping", "needle"), [
    ({"Clip": 1.0}, "unknown variant 'Clip' (Burn's are Value and Norm; burnlike adds GlobalNorm)"),
    ({"Norm": "high"}, "the threshold must be a number, got 'high'"),
    ([1.0], 'expected {"Norm": <threshold>}, {"Value": <threshold>} or {"GlobalNorm": <threshold>}'),
])
def test_a_bad_enum_value_names_its_key(tmp_path, clipping, needle):
    data = json.loads(BURN_WRITTEN)
    data["optimizer"]["grad_clipping"] = clipping
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as e:
        BurnTraining.load(path)
    assert str(e.value).startswith(f"{path}: key 'optimizer.grad_clipping' expects GradientClippingConfig as Burn "
                                   "writes it") and str(e.value).endswith(needle)


def test_burnlikes_earlier_clipping_json_still_loads():
    assert AdamConfig.from_dict({"grad_clipping": {"kind": "value", "threshold": 2.0}}).grad_clipping == \
        GradientClippingConfig.Value(2.0)


# --- Burn's rule for required fields ----------------------------------------------------------------
@config
class MnistTrainingConfig:
    """Burn's mnist example (examples/mnist/src/training.rs, v0.21.0): `#[config(default = ..)]`
    fields first, then the required `optimizer`; `MnistTrainingConfig::new(config_optimizer)`."""

    num_epochs: int = 5
    batch_size: int = 256
    num_workers: int = 8
    seed: int = 42
    optimizer: AdamConfig
    note: str | None
    patience: int


def test_a_required_field_after_defaulted_ones_is_a_constructor_argument_in_declaration_order():
    cfg = MnistTrainingConfig(AdamConfig(beta_1=0.5), 3)
    assert (cfg.optimizer.beta_1, cfg.patience, cfg.num_epochs, cfg.batch_size, cfg.note) == (0.5, 3, 5, 256, None)
    assert MnistTrainingConfig.new(AdamConfig(), 3).with_num_epochs(2).num_epochs == 2
    assert MnistTrainingConfig(AdamConfig(), 3, seed=7).seed == 7  # defaults by keyword, or with_x
    assert [f for f in MnistTrainingConfig.__dataclass_fields__][:5] == [
        "num_epochs", "batch_size", "num_workers", "seed", "optimizer"]  # declared order kept
    with pytest.raises(TypeError):
        MnistTrainingConfig(AdamConfig())  # patience is required too


def test_a_required_field_after_defaulted_ones_saves_loads_and_composes_under_hydra(tmp_path):
    from hydra import compose, initialize
    from hydra.core.config_store import ConfigStore

    cfg = MnistTrainingConfig(AdamConfig(), 4, num_epochs=2)
    cfg.save(tmp_path / "config.json")
    data = json.loads((tmp_path / "config.json").read_text())
    # Burn's key order: required (declaration order), Option, then defaulted
    assert list(data) == ["optimizer", "patience", "note", "num_epochs", "batch_size", "num_workers", "seed"]
    assert MnistTrainingConfig.load(tmp_path / "config.json") == cfg
    ConfigStore.instance().store(name="mnist_training_test", node=MnistTrainingConfig)
    with initialize(version_base=None):
        composed = compose("mnist_training_test", overrides=["optimizer={beta_1:0.5}", "patience=2", "seed=1"])
    built = OmegaConf.to_object(composed)
    assert built == MnistTrainingConfig(AdamConfig(beta_1=0.5), 2, seed=1)
