"""`burnlike.optim.lr_scheduler`: Burn's LR schedulers (constant, step, exponential, linear, cosine
annealing, Noam). Each gives Burn's rate at every iteration from 1, refuses settings Burn refuses
with a message naming them, keeps only its iteration as state, and drives a torch optimizer's lr."""

import math

import pytest
import torch
from torch import nn

from burnlike.optim import (
    AdamConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    NoamLrSchedulerConfig,
    StepLrSchedulerConfig,
)
from tests.helpers.expect import raises_exactly


def test_schedulers_follow_burn_step_semantics():
    s = StepLrSchedulerConfig(1.0, 2, gamma=0.5).init()
    assert [s.step() for _ in range(5)] == [1.0, 1.0, 0.5, 0.5, 0.25]
    e = ExponentialLrSchedulerConfig(1.0, 0.5).init()
    assert [e.step() for _ in range(3)] == [1.0, 0.5, 0.25]
    lin = LinearLrSchedulerConfig(1.0, 0.0, 4).init()
    assert [lin.step() for _ in range(6)] == [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    cos = CosineAnnealingLrSchedulerConfig(1.0, 4).init()
    vals = [cos.step() for _ in range(6)]
    assert vals[0] == 1.0 and vals[4] == pytest.approx(0.0) and vals[5] == 1.0  # cos(0) first, restart after cos(pi)
    noam = NoamLrSchedulerConfig(1.0, warmup_steps=10, model_size=4).init()
    vals = [noam.step() for _ in range(20)]
    assert max(vals) == vals[9]  # peak at the end of warm-up


@pytest.mark.parametrize("gamma", [1.0, 0.5, 1e-9])
def test_exponential_accepts_gamma_in_zero_one(gamma):
    scheduler = ExponentialLrSchedulerConfig(0.1, gamma).init()
    assert [scheduler.step() for _ in range(3)] == pytest.approx([0.1, 0.1 * gamma, 0.1 * gamma**2])



@pytest.mark.parametrize("gamma", [0.0, -0.5, 1.0000001, 1.5, float("nan")])
def test_exponential_refuses_gamma_outside_zero_one(gamma):
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\]"):
        ExponentialLrSchedulerConfig(0.1, gamma).init()


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


def test_noam_rises_linearly_in_warmup_then_decays_as_inverse_sqrt():
    noam = NoamLrSchedulerConfig(1.0, warmup_steps=4, model_size=16).init()
    # d^-0.5 = 1/4; warmup^-1.5 = 1/8: steps 1..4 rise as s/32, then fall as 1/(4*sqrt(s))
    assert [noam.step() for _ in range(5)] == pytest.approx([1 / 32, 2 / 32, 3 / 32, 4 / 32, 1 / (4 * 5**0.5)])


@pytest.mark.parametrize("bad", [0, -1])
def test_noam_refuses_non_positive_sizes_naming_both(bad):
    for sizes in ({"warmup_steps": bad}, {"model_size": bad}):
        with raises_exactly(ValueError, "NoamLrSchedulerConfig: warmup_steps and model_size must be > 0"):
            NoamLrSchedulerConfig(1.0, **sizes).init()


def test_cosine_linear_and_step_refuse_zero_iterations_and_honour_min_lr_and_defaults():
    cos = CosineAnnealingLrSchedulerConfig(1.0, 4, min_lr=0.2).init()
    want = [0.2 + 0.4 * (1 + math.cos(k / 4 * math.pi)) for k in (0, 1, 2, 3, 4, 0)]
    assert [cos.step() for _ in range(6)] == pytest.approx(want)
    one = CosineAnnealingLrSchedulerConfig(1.0, 1).init()
    assert [one.lr_at(k) for k in (1, 2, 3)] == pytest.approx([1.0, 0.0, 1.0])
    with raises_exactly(ValueError, "CosineAnnealingLrSchedulerConfig.num_iters must be > 0"):
        CosineAnnealingLrSchedulerConfig(1.0, 0).init()
    one = LinearLrSchedulerConfig(1.0, 0.5, 1).init()
    assert [one.step() for _ in range(3)] == [1.0, 0.5, 0.5]
    with raises_exactly(ValueError, "LinearLrSchedulerConfig.num_iters must be > 0"):
        LinearLrSchedulerConfig(1.0, 0.5, 0).init()
    with raises_exactly(ValueError, "StepLrSchedulerConfig.step_size must be > 0"):
        StepLrSchedulerConfig(1.0, 0).init()
    assert StepLrSchedulerConfig(1.0, 2).gamma == 0.1
    assert (NoamLrSchedulerConfig(1.0).warmup_steps, NoamLrSchedulerConfig(1.0).model_size) == (4000, 512)
    assert NoamLrSchedulerConfig(1.0, warmup_steps=1, model_size=1).init().lr_at(1) == 1.0


def test_scheduler_state_is_the_iteration():
    s = StepLrSchedulerConfig(1.0, 1, gamma=0.5).init()
    s.step()
    s.step()
    assert s.state_dict() == {"iteration": 2}
    fresh = StepLrSchedulerConfig(1.0, 1, gamma=0.5).init()
    fresh.load_state_dict({"iteration": 2})
    assert fresh.iteration == 2 and fresh.step() == 0.25
    assert [ConstantLr(0.3).step() for _ in range(2)] == [0.3, 0.3]
    assert ConstantLr(0.3).lr_at(100) == 0.3


def test_scheduler_drives_torch_optimizer():
    sched = StepLrSchedulerConfig(0.1, 1, gamma=0.5).init()
    opt = AdamConfig().init().build(nn.Linear(1, 1).parameters(), 1.0)
    torch_sched = sched.torch_scheduler(opt)
    seen = []
    for _ in range(3):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        torch_sched.step()
    assert seen == pytest.approx([0.1, 0.05, 0.025])


def test_cosine_follows_burns_test_lr_change():
    """burn-optim/src/lr_scheduler/cosine.rs (v0.21.0), `test_lr_change`: initial 0.5, min 0.1, 2
    iterations give 0.5 (cos 0), 0.3 (cos pi/2), 0.1 (cos pi), then 0.5 again (the restart)."""
    scheduler = CosineAnnealingLrSchedulerConfig(0.5, 2).with_min_lr(0.1).init()
    assert [scheduler.step() for _ in range(4)] == pytest.approx([0.5, (0.5 + 0.1) * 0.5, 0.1, 0.5])


@pytest.mark.parametrize(("config", "message"), [
    (CosineAnnealingLrSchedulerConfig(0.0, 10), "initial learning rate must be greater than 0 and at most 1, got 0.0"),
    (CosineAnnealingLrSchedulerConfig(1.5, 10), "initial learning rate must be greater than 0 and at most 1, got 1.5"),
    (CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=-0.1),
     "minimum learning rate must be at least 0 and at most equal to the initial learning rate, got -0.1"),
    (CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=0.6),
     "minimum learning rate must be at least 0 and at most equal to the initial learning rate, got 0.6"),
])
def test_cosine_refuses_what_burn_refuses(config, message):
    """burn-optim/src/lr_scheduler/cosine.rs (v0.21.0), `config_initial_lr_too_low/too_high`,
    `config_min_lr_too_low/too_high`: Burn's `init()` returns these errors."""
    with raises_exactly(ValueError, f"CosineAnnealingLrSchedulerConfig: {message}"):
        config.init()


def test_cosine_state_is_burns_iteration_count():
    """burn-optim/src/lr_scheduler/cosine.rs (v0.21.0), `test_save_and_load`: a scheduler loaded
    from the state of one stepped 6 times of 9 continues as that one does."""
    stepped = CosineAnnealingLrSchedulerConfig(1.0, 9).init()
    for _ in range(6):
        stepped.step()
    loaded = CosineAnnealingLrSchedulerConfig(1.0, 9).init()
    loaded.load_state_dict(stepped.state_dict())
    assert [loaded.step() for _ in range(5)] == [stepped.step() for _ in range(5)]
    assert loaded.lr_at(10) == pytest.approx(0.0) and loaded.lr_at(11) == 1.0


# --- Burn's refusals (burn-optim lr_scheduler/linear.rs, exponential.rs, v0.21.0) -------------------
@pytest.mark.parametrize(("config", "message"), [
    (LinearLrSchedulerConfig(0.0, 0.5, 100),
     "LinearLrSchedulerConfig: initial learning rate must be greater than 0 and at most 1, got 0.0"),
    (LinearLrSchedulerConfig(1.5, 0.5, 100),
     "LinearLrSchedulerConfig: initial learning rate must be greater than 0 and at most 1, got 1.5"),
    (LinearLrSchedulerConfig(0.5, -0.5, 100),
     "LinearLrSchedulerConfig: final learning rate must be at least 0 and at most 1, got -0.5"),
    (LinearLrSchedulerConfig(0.5, 1.5, 100),
     "LinearLrSchedulerConfig: final learning rate must be at least 0 and at most 1, got 1.5"),
    (ExponentialLrSchedulerConfig(0.0, 0.5),
     "ExponentialLrSchedulerConfig: initial learning rate must be greater than 0 and at most 1, got 0.0"),
    (ExponentialLrSchedulerConfig(1.5, 0.5),
     "ExponentialLrSchedulerConfig: initial learning rate must be greater than 0 and at most 1, got 1.5"),
])
def test_linear_and_exponential_refuse_what_burn_refuses(config, message):
    """Burn's `config_initial_lr_too_low/too_high`, `config_final_lr_too_low/too_high` tests: `init()`
    returns an error for these rates."""
    with raises_exactly(ValueError, message):
        config.init()


def test_linear_and_exponential_take_burns_boundary_rates():
    assert LinearLrSchedulerConfig(1.0, 0.0, 2).init().step() == 1.0
    assert ExponentialLrSchedulerConfig(1.0, 1.0).init().step() == 1.0


def test_linear_follows_burns_test_sequences():
    """linear.rs `test_lr_decreasing`, `test_lr_increasing`, `test_lr_unchanging`."""
    for config, expected in ((LinearLrSchedulerConfig(0.9, 0.5, 4), [0.9, 0.8, 0.7, 0.6, 0.5, 0.5]),
                             (LinearLrSchedulerConfig(0.01, 0.04, 3), [0.01, 0.02, 0.03, 0.04, 0.04]),
                             (LinearLrSchedulerConfig(0.3, 0.3, 2), [0.3, 0.3, 0.3, 0.3])):
        scheduler = config.init()
        assert [scheduler.step() for _ in expected] == pytest.approx(expected, rel=1e-12)


# --- Burn's records (`LrScheduler::Record`) ---------------------------------------------------------
def burn_exponential_records(initial_lr, gamma, steps):
    """`ExponentialLrScheduler::previous_lr` after each step, with Burn's arithmetic: initial_lr / gamma,
    then multiplied by gamma at every step."""
    previous, out = initial_lr / gamma, [initial_lr / gamma]
    for _ in range(steps):
        previous *= gamma
        out.append(previous)
    return out


def records(scheduler, steps):
    """The scheduler's record before its first step and after each of `steps` steps."""
    out = [scheduler.to_record()]
    for _ in range(steps):
        scheduler.step()
        out.append(scheduler.to_record())
    return out


def test_each_schedulers_record_is_burns():
    """What each Burn scheduler's `to_record` holds (burn-optim lr_scheduler/*.rs, v0.21.0): linear the
    iterations left (num_iters + 1 at first), cosine `current_iter` (usize::MAX before the first step,
    then wrapping through the cycle of num_iters + 1), noam its step count, step its `iter_idx` (an i32
    from -1), exponential `previous_lr`, a constant rate `()`."""
    assert records(LinearLrSchedulerConfig(1.0, 0.01, 3).init(), 5) == [4, 3, 2, 1, 0, 0]
    assert records(CosineAnnealingLrSchedulerConfig(1.0, 2).init(), 5) == [2**64 - 1, 0, 1, 2, 0, 1]
    assert records(NoamLrSchedulerConfig(1.0).init(), 3) == [0, 1, 2, 3]
    assert records(StepLrSchedulerConfig(0.007, 10).init(), 3) == [-1, 0, 1, 2]
    assert records(ConstantLr(0.3), 2) == [None, None, None]
    got = records(ExponentialLrSchedulerConfig(0.083, 0.3).init(), 7)
    assert got == pytest.approx(burn_exponential_records(0.083, 0.3, 7), rel=1e-14)


@pytest.mark.parametrize(("config", "steps"), [
    (LinearLrSchedulerConfig(1.0, 0.01, 6), 4),  # linear.rs test_save_and_load: NUM_ITERS / 3 * 2
    (ExponentialLrSchedulerConfig(0.083, 0.3), 7),  # exponential.rs test_save_and_load
    (StepLrSchedulerConfig(0.007, 10, gamma=0.03), 15),  # step.rs test_save_and_load: 3 * STEP_SIZE / 2
    (CosineAnnealingLrSchedulerConfig(1.0, 9), 6),  # cosine.rs test_save_and_load
    (NoamLrSchedulerConfig(0.5, warmup_steps=3, model_size=4), 5),
])
def test_a_scheduler_loaded_from_a_record_continues_as_the_saved_one(config, steps):
    """Burn's `test_utils::check_save_load`: step n times, save the record, load it into a fresh
    scheduler; both give the same rates from there."""
    saved = config.init()
    for _ in range(steps):
        saved.step()
    loaded = config.init().load_record(saved.to_record())
    assert [loaded.step() for _ in range(12)] == pytest.approx([saved.step() for _ in range(12)], rel=1e-12)


def test_a_record_laid_out_by_burn_sets_where_the_schedule_stands():
    """Records as Burn writes them, read into fresh schedulers: the next rates are Burn's (linear:
    `final_lr - step_size * remaining`; cosine at `current_iter + 1`; exponential: previous_lr * gamma)."""
    linear = LinearLrSchedulerConfig(0.9, 0.5, 4).init().load_record(3)  # 3 of 5 left: 2 steps taken
    assert [linear.step() for _ in range(4)] == pytest.approx([0.7, 0.6, 0.5, 0.5], rel=1e-12)
    cosine = CosineAnnealingLrSchedulerConfig(0.5, 2, min_lr=0.1).init().load_record(1)
    assert [cosine.step() for _ in range(2)] == pytest.approx([0.1, 0.5])
    assert CosineAnnealingLrSchedulerConfig(0.5, 2).init().load_record(2**64 - 1).step() == 0.5
    exponential = ExponentialLrSchedulerConfig(0.8, 0.1).init().load_record(0.008000000000000002)
    assert [exponential.step() for _ in range(2)] == pytest.approx([0.0008, 0.00008], rel=1e-12)
    step = StepLrSchedulerConfig(0.5, 3).init().load_record(2)
    assert [step.step() for _ in range(4)] == pytest.approx([0.05, 0.05, 0.05, 0.005])
    noam = NoamLrSchedulerConfig(1.0, warmup_steps=4, model_size=16).init().load_record(4)
    assert noam.step() == pytest.approx(1 / (4 * 5**0.5)) and noam.iteration == 5


@pytest.mark.parametrize(("config", "record", "expected"), [
    (LinearLrSchedulerConfig(0.9, 0.5, 4), 6, "expected the iterations left, an integer from 0 to 5, got 6"),
    (LinearLrSchedulerConfig(0.9, 0.5, 4), 1.0, "expected the iterations left, an integer from 0 to 5, got 1.0"),
    (CosineAnnealingLrSchedulerConfig(0.5, 2), 3,
     "expected the position in the cycle, an integer from 0 to 2 (or usize::MAX before the first step), got 3"),
    (NoamLrSchedulerConfig(1.0), -1, "expected the number of steps taken, an integer >= 0, got -1"),
    (StepLrSchedulerConfig(0.5, 3), True, "expected the iteration index, an integer >= -1, got True"),
    (ExponentialLrSchedulerConfig(0.8, 0.1), "0.1", "expected the last learning rate, a number >= 0, got '0.1'"),
])
def test_a_record_of_another_kind_is_refused_saying_what_the_scheduler_records(config, record, expected):
    with raises_exactly(ValueError, expected):
        config.init().load_record(record)


def test_the_torch_scheduler_state_carries_burns_record_and_loading_one_moves_the_rate():
    """The LambdaLR a fit uses: its state holds Burn's record at its step count; a record loaded into
    it sets the schedule and the optimizer's current rate (Lightning restores the optimizer first)."""
    config = LinearLrSchedulerConfig(0.9, 0.5, 4)
    opt = AdamConfig().init().build(nn.Linear(1, 1).parameters(), 1.0)
    torch_sched = config.init().torch_scheduler(opt)
    for _ in range(2):
        opt.step()
        torch_sched.step()
    state = torch_sched.state_dict()
    assert state["burn_record"] == 3 and state["last_epoch"] == 2  # Burn: 2 steps taken, 3 left
    other = AdamConfig().init().build(nn.Linear(1, 1).parameters(), 1.0)
    restored = config.init().torch_scheduler(other)
    restored.load_state_dict({**state, "burn_record": 1})  # Burn's record of 4 steps taken
    assert other.param_groups[0]["lr"] == pytest.approx(0.5) and restored.get_last_lr() == pytest.approx([0.5])
    with pytest.raises(ValueError, match=r"^not the record of LinearLrScheduler \(expected the iterations left"):
        restored.load_state_dict({**state, "burn_record": "three"})


def test_a_loaded_record_fills_a_tensor_rate_in_place():
    """The fast path's optimizer keeps its rate as a tensor that a captured step reads: loading a
    record changes its value, not the tensor."""
    lr = torch.tensor(1.0)
    opt = torch.optim.Adam(nn.Linear(1, 1).parameters(), lr=lr)
    scheduler = LinearLrSchedulerConfig(0.9, 0.5, 4).init().torch_scheduler(opt)
    scheduler.load_state_dict({**scheduler.state_dict(), "burn_record": 2})  # 3 steps taken
    assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.6)
