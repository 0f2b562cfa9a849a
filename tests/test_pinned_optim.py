"""LR scheduler values computed by hand from Burn's definitions (issue 17)."""

import pytest

from burnlike.optim import ExponentialLrSchedulerConfig, NoamLrSchedulerConfig


@pytest.mark.parametrize(("factor", "warmup", "size"), [(1.0, 10, 4), (2.0, 4000, 512), (0.5, 3, 64)])
def test_noam_values_follow_burns_formula(factor, warmup, size):
    """Burn: lr(step) = init_lr * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), step from 1."""
    scheduler = NoamLrSchedulerConfig(factor, warmup_steps=warmup, model_size=size).init()
    steps = sorted({1, 2, warmup - 1, warmup, warmup + 1, 2 * warmup, 10 * warmup} - {0})
    by_hand = {s: factor / size**0.5 * min(1 / s**0.5, s / warmup**1.5) for s in steps}
    got = {}
    for step in range(1, max(steps) + 1):
        lr = scheduler.step()
        if step in by_hand:
            got[step] = lr
    assert got == pytest.approx(by_hand, rel=1e-12)


def test_noam_known_values():
    noam = NoamLrSchedulerConfig(1.0, warmup_steps=4, model_size=16).init()
    # d^-0.5 = 1/4; warmup^-1.5 = 1/8: steps 1..4 rise as s/32, then fall as 1/(4*sqrt(s))
    assert [noam.step() for _ in range(5)] == pytest.approx([1 / 32, 2 / 32, 3 / 32, 4 / 32, 1 / (4 * 5**0.5)])


@pytest.mark.parametrize("bad", [0, -1])
def test_noam_refuses_non_positive_sizes(bad):
    with pytest.raises(ValueError, match="warmup_steps and model_size"):
        NoamLrSchedulerConfig(1.0, warmup_steps=bad).init()
    with pytest.raises(ValueError, match="warmup_steps and model_size"):
        NoamLrSchedulerConfig(1.0, model_size=bad).init()


@pytest.mark.parametrize("gamma", [0.0, -0.5, 1.0000001, 1.5, float("nan")])
def test_exponential_refuses_gamma_outside_zero_one(gamma):
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\]"):
        ExponentialLrSchedulerConfig(0.1, gamma).init()


@pytest.mark.parametrize("gamma", [1.0, 0.5, 1e-9])
def test_exponential_accepts_gamma_in_zero_one(gamma):
    scheduler = ExponentialLrSchedulerConfig(0.1, gamma).init()
    assert [scheduler.step() for _ in range(3)] == pytest.approx([0.1, 0.1 * gamma, 0.1 * gamma**2])
