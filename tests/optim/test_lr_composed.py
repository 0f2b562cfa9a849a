"""`burnlike.optim.lr_composed`: ComposedLrSchedulerConfig, Burn's composed LR scheduler. Its builders
chain schedulers, their rates reduce by product (the default), sum or average at every step, and its
JSON keeps Burn's shape (pretty-printed as Burn's) both ways, refusing bad JSON by the field."""

import math

import pytest

from burnlike.config import ConfigError
from burnlike.optim import (
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    StepLrSchedulerConfig,
)


def test_composed_scheduler_builders_reductions_and_json_round_trip(tmp_path):
    noam, step = NoamLrSchedulerConfig(2.0, warmup_steps=2, model_size=4), StepLrSchedulerConfig(1.0, 1, gamma=0.5)
    cfg = ComposedLrSchedulerConfig().noam(noam).step(step).with_reduction("Sum")
    assert cfg.schedulers == [noam, step] and cfg.reduction is SchedulerReduction.SUM
    assert cfg.to_dict() == {"schedulers": [{"Noam": noam.to_dict()}, {"Step": step.to_dict()}], "reduction": "Sum"}
    scheduler = cfg.init()
    assert [scheduler.step() for _ in range(3)] == pytest.approx(
        [noam.init().lr_at(k) + 0.5 ** (k - 1) for k in (1, 2, 3)])
    cfg.save(tmp_path / "c.json")
    lines = (tmp_path / "c.json").read_text().split("\n")  # pretty JSON as Burn's (serde_json, 2 spaces)
    assert lines[:3] == ["{", '  "schedulers": [', "    {"] and lines[-2:] == ["}", ""]
    assert ComposedLrSchedulerConfig.load(tmp_path / "c.json") == cfg
    assert ComposedLrSchedulerConfig.from_dict({}) == ComposedLrSchedulerConfig()
    assert ComposedLrSchedulerConfig().init().lr_at(1) == 1.0  # the empty product
    assert ComposedLrSchedulerConfig().with_reduction("Avg").init().lr_at(1) == 0.0  # nothing to average
    assert ComposedLrSchedulerConfig().with_reduction("Sum").init().lr_at(1) == 0.0
    cosine = CosineAnnealingLrSchedulerConfig(1.0, 10)
    base = ComposedLrSchedulerConfig().cosine(cosine)
    assert base.with_reduction(SchedulerReduction.SUM).noam(noam).reduction is SchedulerReduction.SUM
    assert base.linear(LinearLrSchedulerConfig(1.0, 0.0, 2)).schedulers[0] is cosine and base.schedulers == [cosine]


def test_composed_lr_scheduler_reduces_like_burn(tmp_path):
    linear_cfg = LinearLrSchedulerConfig(1.0, 0.5, 4)
    exp_cfg = ExponentialLrSchedulerConfig(0.1, 0.9)
    parts = [lambda k: 1.0 + (k - 1) * (0.5 - 1.0) / 4 if k <= 4 else 0.5, lambda k: 0.1 * 0.9 ** (k - 1)]
    for reduction, reduce in ((SchedulerReduction.PROD, math.prod), (SchedulerReduction.SUM, sum),
                              (SchedulerReduction.AVG, lambda v: sum(v) / len(v))):
        cfg = ComposedLrSchedulerConfig().linear(linear_cfg).exponential(exp_cfg).with_reduction(reduction)
        scheduler = cfg.init()
        for k in range(1, 7):
            assert scheduler.step() == pytest.approx(reduce([p(k) for p in parts]))
    assert ComposedLrSchedulerConfig().reduction is SchedulerReduction.PROD
    cfg = ComposedLrSchedulerConfig().linear(linear_cfg).cosine(CosineAnnealingLrSchedulerConfig(1.0, 10))
    cfg.save(tmp_path / "s.json")
    text = (tmp_path / "s.json").read_text()
    assert '"Linear"' in text and '"Cosine"' in text and '"Prod"' in text
    loaded = ComposedLrSchedulerConfig.load(tmp_path / "s.json")
    assert [loaded.init().lr_at(k) for k in range(1, 5)] == [cfg.init().lr_at(k) for k in range(1, 5)]
    with pytest.raises(ConfigError, match=r"schedulers\[0\]"):
        ComposedLrSchedulerConfig.from_dict({"schedulers": [{"Warmup": {}}]})



def test_composed_scheduler_refuses_bad_json_naming_the_field(tmp_path):
    with pytest.raises(ConfigError) as e:
        ComposedLrSchedulerConfig([ConstantLr(1.0)]).to_dict()
    assert str(e.value) == (
        "ComposedLrSchedulerConfig: cannot save a ConstantLr (expected one of LinearLrSchedulerConfig, "
        "CosineAnnealingLrSchedulerConfig, ExponentialLrSchedulerConfig, NoamLrSchedulerConfig, StepLrSchedulerConfig)")
    variants = "{'Linear': {...}, 'Cosine': {...}, 'Exponential': {...}, 'Noam': {...}, 'Step': {...}}"
    for i, entries in ((1, [{"Step": {"initial_lr": 1.0, "step_size": 1}}, {"Step": {}, "Noam": {}}]),
                       (0, [["Linear"]]), (0, [{}]), (0, [{"Warmup": {}}])):
        with pytest.raises(ConfigError) as e:
            ComposedLrSchedulerConfig.from_dict({"schedulers": entries})
        assert str(e.value) == f"ComposedLrSchedulerConfig: schedulers[{i}] must be one of {variants}, got {entries[i]!r}"
    with pytest.raises(ConfigError) as e:
        ComposedLrSchedulerConfig.from_dict({"reduction": "Mean"})
    assert str(e.value) == "ComposedLrSchedulerConfig: reduction must be Avg, Sum or Prod, got 'Mean'"
    assert e.value.__cause__ is None and e.value.__suppress_context__
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError) as e:
        ComposedLrSchedulerConfig.load(tmp_path / "bad.json")
    assert str(e.value).startswith(f"{tmp_path / 'bad.json'}: cannot read a ComposedLrSchedulerConfig (Expecting ")
    assert e.value.__suppress_context__
    with pytest.raises(ConfigError) as e:
        ComposedLrSchedulerConfig.load(tmp_path / "missing.json")
    assert str(e.value).startswith(f"{tmp_path / 'missing.json'}: cannot read a ComposedLrSchedulerConfig ([Errno 2]")
    exp = ComposedLrSchedulerConfig.from_dict({"schedulers": [{"Exponential": {"initial_lr": 1.0, "gamma": 0.5}}]})
    assert exp.schedulers == [ExponentialLrSchedulerConfig(1.0, 0.5)] and exp.reduction is SchedulerReduction.PROD
    two = ComposedLrSchedulerConfig.from_dict({"schedulers": [{"Linear": LinearLrSchedulerConfig(1.0, 0.0, 2).to_dict()},
                                                              {"Cosine": {"initial_lr": 1.0, "num_iters": 3}}],
                                               "reduction": "Avg"})
    assert two == ComposedLrSchedulerConfig([LinearLrSchedulerConfig(1.0, 0.0, 2),
                                             CosineAnnealingLrSchedulerConfig(1.0, 3)], SchedulerReduction.AVG)


def test_reduction_and_variants_have_burns_names():
    """burn-optim/src/lr_scheduler/composed.rs (v0.21.0): `SchedulerReduction::{Avg, Sum, Prod}`."""
    assert SchedulerReduction.Avg is SchedulerReduction.AVG and SchedulerReduction.Prod is SchedulerReduction.PROD
    assert SchedulerReduction.Sum is SchedulerReduction.SUM
    assert ComposedLrSchedulerConfig().with_reduction(SchedulerReduction.Avg).to_dict()["reduction"] == "Avg"


# --- Burn's record: `ComposedLrSchedulerRecord { schedulers: Vec<LrSchedulerRecord> }` ----------------
def mnist_schedule() -> ComposedLrSchedulerConfig:
    """Burn's mnist example's schedule (examples/mnist/src/training.rs, v0.21.0), shortened."""
    return (ComposedLrSchedulerConfig().cosine(CosineAnnealingLrSchedulerConfig(1.0, 20))
            .linear(LinearLrSchedulerConfig(1e-8, 1.0, 20)).linear(LinearLrSchedulerConfig(1e-2, 1e-6, 100)))


def test_the_composed_record_is_burns_list_of_tagged_part_records():
    """burn-optim lr_scheduler/composed.rs: each part's record under its `LrSchedulerRecord` variant
    name; cosine's `current_iter` wraps through 21, the linears count their iterations left."""
    scheduler = mnist_schedule().init()
    assert scheduler.to_record() == {"schedulers": [{"Cosine": 2**64 - 1}, {"Linear": 21}, {"Linear": 101}]}
    for _ in range(30):
        scheduler.step()
    assert scheduler.to_record() == {"schedulers": [{"Cosine": (30 - 1) % 21}, {"Linear": 0}, {"Linear": 101 - 30}]}


def test_a_composed_scheduler_continues_from_burns_record():
    """A record Burn wrote after 30 steps, loaded into a fresh scheduler: it continues as one stepped
    30 times (the finished linear and the restarted cosine give no step count of their own)."""
    stepped = mnist_schedule().init()
    for _ in range(30):
        stepped.step()
    loaded = mnist_schedule().init().load_record(
        {"schedulers": [{"Cosine": 8}, {"Linear": 0}, {"Linear": 71}]})
    assert [loaded.step() for _ in range(40)] == pytest.approx([stepped.step() for _ in range(40)], rel=1e-12)


@pytest.mark.parametrize(("record", "message"), [
    ({"schedulers": [{"Cosine": 8}]}, "expected Burn's composed record {'schedulers': [...]} with 3 entries "
                                      "(Cosine, Linear, Linear), got {'schedulers': [{'Cosine': 8}]}"),
    ({"schedulers": [{"Linear": 8}, {"Linear": 0}, {"Linear": 71}]}, "schedulers[0]: expected {'Cosine': ...}, "
                                                                     "got {'Linear': 8}"),
    ({"schedulers": [{"Cosine": 8}, {"Linear": 22}, {"Linear": 71}]},
     "schedulers[1] (Linear): expected the iterations left, an integer from 0 to 21, got 22"),
])
def test_a_composed_record_that_does_not_fit_names_the_part(record, message):
    with pytest.raises(ValueError) as caught:
        mnist_schedule().init().load_record(record)
    assert str(caught.value) == message
