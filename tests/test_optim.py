import math

import pytest
import torch
from torch import nn

from burnlike.autodiff import backward
from burnlike.optim import (
    AdamConfig,
    AdamWConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    LinearLrSchedulerConfig,
    MomentumConfig,
    NoamLrSchedulerConfig,
    SgdConfig,
    StepLrSchedulerConfig,
    WeightDecayConfig,
)


def test_burn_defaults():
    adam = AdamConfig()
    assert (adam.beta_1, adam.beta_2, adam.epsilon) == (0.9, 0.999, 1e-5)
    assert AdamWConfig().weight_decay == 1e-4
    assert MomentumConfig().dampening == 0.1


def test_custom_loop_step_matches_torch_adam():
    torch.manual_seed(0)
    a = nn.Linear(3, 2)
    b = nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    x = torch.randn(8, 3)
    optim = AdamConfig().init()
    ref = torch.optim.Adam(b.parameters(), lr=1e-2, eps=1e-5)
    for _ in range(3):
        grads = GradientsParams.from_grads(backward(a(x).pow(2).sum()), a)
        a = optim.step(1e-2, a, grads)
        ref.zero_grad()
        b(x).pow(2).sum().backward()
        ref.step()
    assert torch.allclose(a.weight, b.weight) and torch.allclose(a.bias, b.bias)
    assert all(p.grad is None for p in a.parameters())  # consumed, as in Burn


def test_lr_is_an_argument_of_the_step():
    m = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        m.weight.fill_(1.0)
    optim = SgdConfig().init()
    grads = GradientsParams.from_grads(backward(m(torch.ones(1, 2)).sum()), m)
    optim.step(0.5, m, grads)
    assert torch.allclose(m.weight, torch.full((1, 2), 0.5))


def test_gradients_consumed_once():
    m = nn.Linear(2, 1)
    g = backward(m(torch.ones(1, 2)).sum())
    GradientsParams.from_grads(g, m)
    with pytest.raises(RuntimeError, match="consumed"):
        GradientsParams.from_grads(g, m)


def test_accumulator_sums_and_pops():
    m = nn.Linear(2, 1)
    acc = GradientsAccumulator()
    for _ in range(3):
        acc.accumulate(m, GradientsParams.from_grads(backward(m(torch.ones(1, 2)).sum()), m))
    total = acc.grads()
    assert torch.allclose(total.get(m.weight), torch.full((1, 2), 3.0))
    assert len(acc.grads()) == 0


def test_per_parameter_clipping():
    p = nn.Parameter(torch.zeros(4))
    q = nn.Parameter(torch.zeros(1))
    p.grad = torch.full((4,), 10.0)
    q.grad = torch.full((1,), 0.1)
    GradientClippingConfig.Norm(1.0).clip([p, q])
    assert math.isclose(p.grad.norm().item(), 1.0, rel_tol=1e-5)
    assert q.grad.item() == pytest.approx(0.1)  # per tensor, not global
    p.grad = torch.tensor([5.0, -5.0, 0.5, 0.0])
    GradientClippingConfig.Value(1.0).clip([p])
    assert p.grad.tolist() == [1.0, -1.0, 0.5, 0.0]


def test_weight_decay_reaches_torch():
    opt = AdamConfig(weight_decay=WeightDecayConfig(0.1)).init().build(nn.Linear(1, 1).parameters(), 1e-3)
    assert opt.param_groups[0]["weight_decay"] == 0.1 and opt.param_groups[0]["eps"] == 1e-5
    sgd = SgdConfig(momentum=MomentumConfig()).init().build(nn.Linear(1, 1).parameters(), 1e-3)
    assert sgd.param_groups[0]["momentum"] == 0.9 and sgd.param_groups[0]["dampening"] == 0.1


def test_schedulers_follow_burn_step_semantics():
    s = StepLrSchedulerConfig(1.0, 2, gamma=0.5).init()
    assert [s.step() for _ in range(5)] == [1.0, 1.0, 0.5, 0.5, 0.25]
    e = ExponentialLrSchedulerConfig(1.0, 0.5).init()
    assert [e.step() for _ in range(3)] == [1.0, 0.5, 0.25]
    lin = LinearLrSchedulerConfig(1.0, 0.0, 4).init()
    assert [lin.step() for _ in range(6)] == [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    cos = CosineAnnealingLrSchedulerConfig(1.0, 4).init()
    vals = [cos.step() for _ in range(5)]
    assert vals[0] < 1.0 and vals[3] == pytest.approx(0.0) and vals[4] == pytest.approx(1.0)  # restart
    noam = NoamLrSchedulerConfig(1.0, warmup_steps=10, model_size=4).init()
    vals = [noam.step() for _ in range(20)]
    assert max(vals) == vals[9]  # peak at the end of warm-up


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
