"""`burnlike.optim.lr_sequential`: Burn's SequentialLrSchedulerConfig (each milestone the steps done
when the next scheduler takes over, each scheduler from its own first step; Burn's refusals; Burn's
JSON) and `warmup_cosine`, nanoGPT's schedule, checked against its formula written here."""

import pytest

from burnlike.config import ConfigError
from burnlike.optim import (
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    SequentialLrSchedulerConfig,
    warmup_cosine,
)
from tests.helpers.nanogpt import get_lr


def burn_example(milestones):
    return SequentialLrSchedulerConfig([LinearLrSchedulerConfig(0.1, 0.3, 2), ExponentialLrSchedulerConfig(0.5, 0.5),
                                        CosineAnnealingLrSchedulerConfig(0.8, 2)], milestones)


def test_schedulers_switch_at_the_milestones_as_burns_test_says():
    """burn-optim lr_scheduler/sequential.rs, `switches_schedulers_at_milestones`."""
    scheduler = burn_example([2, 5]).init()
    assert [scheduler.step() for _ in range(8)] == pytest.approx([0.1, 0.2, 0.5, 0.25, 0.125, 0.8, 0.4, 0.0])


@pytest.mark.parametrize(("schedulers", "milestones", "message"), [
    ([], [], "At least one scheduler is required"),
    ([0.1, 0.2], [], "The number of milestones must be one less than the number of schedulers"),
    ([0.1, 0.2, 0.3], [0, 2], "Milestones must be greater than zero and strictly increasing"),
    ([0.1, 0.2, 0.3], [2, 2], "Milestones must be greater than zero and strictly increasing"),
    ([0.1, 0.2, 0.3], [3, 2], "Milestones must be greater than zero and strictly increasing"),
])
def test_init_refuses_what_burn_refuses_with_its_messages(schedulers, milestones, message):
    with pytest.raises(ValueError, match=f"SequentialLrSchedulerConfig: {message}"):
        SequentialLrSchedulerConfig(schedulers, milestones).init()


def test_a_number_is_burns_constant_and_json_round_trips_in_burns_shape(tmp_path):
    inner = ComposedLrSchedulerConfig().linear(LinearLrSchedulerConfig(1.0, 0.5, 2))
    cfg = SequentialLrSchedulerConfig([burn_example([2, 5]), 0.25, inner], [3, 4])
    assert cfg.to_dict()["schedulers"][1:] == [{"Constant": 0.25}, {"Composed": inner.to_dict()}]
    assert cfg.to_dict()["schedulers"][0]["Sequential"]["milestones"] == [2, 5]
    cfg.save(tmp_path / "s.json")
    loaded = SequentialLrSchedulerConfig.load(tmp_path / "s.json")
    assert loaded == cfg
    assert [loaded.init().lr_at(k) for k in range(1, 7)] == pytest.approx([0.1, 0.2, 0.5, 0.25, 1.0, 0.75])


@pytest.mark.parametrize(("data", "message"), [
    ({"schedulers": [{"Warmup": {}}]}, r"schedulers\[0\] must be one of"),
    ({"schedulers": [{"Constant": "high"}]}, r"schedulers\[0\]: Constant takes a learning rate, got 'high'"),
    ({"milestones": [1.5]}, "milestones must be a list of integers, got \\[1.5\\]"),
])
def test_bad_json_is_refused_naming_the_field(data, message):
    with pytest.raises(ConfigError, match=message):
        SequentialLrSchedulerConfig.from_dict(data)


@pytest.mark.parametrize(("warmup", "decay"), [(100, 2000), (0, 50), (3, 4)])
def test_warmup_cosine_is_nanogpts_get_lr(warmup, decay):
    """Burn steps its scheduler before each optimizer step, from 1: step k trains at get_lr(k - 1)."""
    scheduler = warmup_cosine(1e-3, warmup, decay, 1e-4).init()
    steps = sorted({1, 2, warmup, warmup + 1, warmup + 2, (warmup + decay) // 2, decay - 1, decay, decay + 1,
                    decay + 2, decay + 10, 3 * decay} - {0})
    for k in steps:
        assert scheduler.lr_at(k) == pytest.approx(get_lr(k - 1, 1e-3, 1e-4, warmup, decay), rel=1e-12, abs=1e-18)


def test_warmup_cosine_refuses_a_decay_not_after_the_warmup():
    with pytest.raises(ValueError, match="decay_iters must be an integer > warmup_iters=10, got 10"):
        warmup_cosine(1e-3, 10, 10)
    with pytest.raises(ValueError, match="warmup_iters must be an integer >= 0, got -1"):
        warmup_cosine(1e-3, -1, 10)
