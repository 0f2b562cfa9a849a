"""The optimizer API around the update rules (issue 17): Burn's `SimpleOptimizer` contract under a
closure, gradients by parameter, clipping, optimizer state and rebinding, config-to-torch
translation, LR scheduler state and edges, the composed scheduler's JSON, and the error messages."""

import copy
import math

import numpy as np
import pytest
import torch
from expect import raises_exactly
from torch import nn

from burnlike.autodiff import backward
from burnlike.config import ConfigError
from burnlike.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    Adan,
    AdanConfig,
    BurnAdamW,
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    LBFGSConfig,
    LinearLrSchedulerConfig,
    LineSearchFn,
    MomentumConfig,
    Muon,
    MuonConfig,
    NoamLrSchedulerConfig,
    Optimizer,
    OptimizerConfig,
    RmsPropConfig,
    SchedulerReduction,
    SgdConfig,
    StepLrSchedulerConfig,
    WeightDecayConfig,
)
from burnlike.optim.optimizer import as_optimizer
from burnlike.optim.rule import RuleOptimizer


def param(*values: float) -> nn.Parameter:
    return nn.Parameter(torch.tensor(values, dtype=torch.float64))


# --- RuleOptimizer: Burn's SimpleOptimizer as a torch optimizer -------------------------------------


class Halve(RuleOptimizer):
    """θ ← θ - lr·g, recording what it was given."""

    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})
        self.seen = []

    def update(self, param, grad, state, group):
        state["n"] = state.get("n", 0) + 1
        self.seen.append((grad.clone(), state["n"], group["lr"]))
        param.sub_(grad, alpha=group["lr"])


def test_rule_optimizer_runs_the_closure_first_and_returns_its_loss():
    """Lightning hands the optimizer a closure that runs forward and backward: the update must see
    the gradient the closure produced, and step() returns the closure's loss."""
    p = param(1.0, -2.0)
    opt = Halve([p], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()  # grad 2p
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 5.0 and loss.requires_grad  # the closure ran with grad enabled
    assert p.tolist() == [0.0, 0.0]  # 1 - 0.5·2, -2 - 0.5·(-4)
    assert opt.step() is None  # no closure: no loss, the stored gradient is applied again
    assert p.tolist() == [-1.0, 2.0]
    assert [n for _, n, _ in opt.seen] == [1, 2]  # the per-parameter state persists between steps


def test_rule_optimizer_skips_parameters_without_gradient():
    p, q = param(1.0), param(2.0)
    opt = Halve([p, q], lr=1.0)
    p.grad = torch.tensor([0.25], dtype=torch.float64)
    opt.step()
    assert p.tolist() == [0.75] and q.tolist() == [2.0] and len(opt.seen) == 1


def test_rule_optimizer_requires_an_update_rule():
    p = param(1.0)
    p.grad = torch.ones(1, dtype=torch.float64)
    with pytest.raises(NotImplementedError):
        RuleOptimizer([p], {"lr": 1.0}).step()


@pytest.mark.parametrize("optimizer", [
    lambda ps: Adan(ps, 0.1), lambda ps: BurnAdamW(ps, 0.1, cautious_weight_decay=True),
    lambda ps: Muon(ps, 0.1, MuonConfig())])
def test_own_optimizers_use_the_closures_gradient(optimizer):
    """Burn's optimizers that run on RuleOptimizer move the weights from the closure's gradient."""
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(3, 3))
    opt = optimizer([w])
    before = w.detach().clone()

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx((before * before).sum().item())
    assert (w.detach() * w.detach()).sum().item() < loss.item()  # a step against the gradient


# --- GradientsParams and the accumulator -------------------------------------------------------------


def test_gradients_params_map_by_parameter():
    m = nn.Linear(2, 1)
    grads = GradientsParams.from_grads(backward((m(torch.ones(1, 2)) * 3).sum()), m)
    assert len(grads) == 2 and m.weight in grads and m.bias in grads
    assert torch.equal(grads.get(m.weight), torch.full((1, 2), 3.0))
    removed = grads.remove(m.bias)
    assert torch.equal(removed, torch.full((1,), 3.0))
    assert m.bias not in grads and len(grads) == 1 and grads.get(m.bias) is None
    assert grads.remove(m.bias) is None  # removing twice is not an error, as Burn's
    grads.register(m.bias, torch.ones(1))
    assert [p is m.bias for p, _ in grads.items()] == [False, True]


def test_gradients_from_params_keeps_only_the_modules_chosen_parameters():
    m, other = nn.Linear(2, 1), nn.Linear(2, 1)
    loss = (m(torch.ones(1, 2)) + other(torch.ones(1, 2))).sum()
    grads = GradientsParams.from_params(backward(loss), m, [m.weight, other.weight])
    assert len(grads) == 1 and m.weight in grads and other.weight not in grads
    assert torch.equal(grads.get(m.weight), torch.ones(1, 2))


def test_gradients_skip_parameters_that_do_not_reach_the_loss():
    m = nn.Linear(2, 1)
    frozen = nn.Linear(2, 1)
    frozen.weight.requires_grad_(False)
    model = nn.ModuleDict({"used": m, "frozen": frozen})
    grads = GradientsParams.from_grads(backward(m(torch.ones(1, 2)).sum()), model)
    assert len(grads) == 2 and frozen.bias not in grads and frozen.weight not in grads


def test_accumulator_adds_gradients_of_different_parameters_separately():
    m = nn.Linear(2, 1)
    acc = GradientsAccumulator()
    acc.accumulate(m, GradientsParams({m.weight: torch.ones(1, 2)}))
    acc.accumulate(m, GradientsParams({m.weight: torch.full((1, 2), 2.0), m.bias: torch.full((1,), 5.0)}))
    total = acc.grads()
    assert torch.equal(total.get(m.weight), torch.full((1, 2), 3.0))
    assert torch.equal(total.get(m.bias), torch.full((1,), 5.0))


# --- clipping, Optimizer state and binding ------------------------------------------------------------


def test_clipping_refuses_an_unknown_kind_naming_it():
    p = param(5.0)
    p.grad = torch.tensor([5.0], dtype=torch.float64)
    with raises_exactly(ValueError, "GradientClippingConfig.kind must be 'norm' or 'value', got 'max'"):
        GradientClippingConfig(kind="max").clip([p])


def test_clipping_skips_parameters_without_gradient_and_defaults_to_norm_one():
    p, q = param(0.0, 0.0), param(0.0)
    p.grad = torch.tensor([3.0, 4.0], dtype=torch.float64)
    GradientClippingConfig().clip([q, p])
    assert q.grad is None and p.grad.tolist() == pytest.approx([0.6, 0.8])
    assert GradientClippingConfig.Value(2.0) == GradientClippingConfig("value", 2.0)
    assert GradientClippingConfig.Norm(2.0) == GradientClippingConfig("norm", 2.0)


def test_custom_loop_applies_the_configs_clipping_before_the_step():
    m = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        m.weight.fill_(0.0)
    SgdConfig(gradient_clipping=GradientClippingConfig.Value(0.5)).init().step(
        1.0, m, GradientsParams({m.weight: torch.tensor([[10.0, -0.25]])}))
    assert m.weight.tolist() == [[-0.5, 0.25]]
    clipped = AdamConfig(grad_clipping=GradientClippingConfig.Norm(1.0)).init()
    assert clipped.grad_clipping == GradientClippingConfig.Norm(1.0)
    sgd = SgdConfig(gradient_clipping=GradientClippingConfig.Norm(1.0)).init()
    sgd.step(1.0, m, GradientsParams({m.weight: torch.tensor([[3.0, 4.0]])}))
    assert m.weight.flatten().tolist() == pytest.approx([-1.1, -0.55])
    SgdConfig().init().step(1.0, m, GradientsParams({m.weight: torch.tensor([[3.0, 4.0]])}))
    assert m.weight.flatten().tolist() == pytest.approx([-4.1, -4.55])  # no clipping configured


def test_optimizer_state_round_trips_and_needs_a_bound_optimizer():
    torch.manual_seed(0)
    a = nn.Linear(2, 1)
    optim = AdamConfig().init()
    assert optim.state_dict() == {}
    with raises_exactly(RuntimeError, "Optimizer.load_state_dict: run one step (or build) first so parameters are bound"):
        optim.load_state_dict({})
    x = torch.randn(4, 2)
    optim.step(0.1, a, GradientsParams.from_grads(backward(a(x).sum()), a))
    saved = copy.deepcopy(optim.state_dict())  # torch's state dict shares the live tensors
    assert saved["state"][0]["step"].item() == 1
    b = nn.Linear(2, 1)
    b.load_state_dict(a.state_dict())
    other = AdamConfig().init()
    other.step(0.0, b, GradientsParams())  # binds b's parameters without moving them
    other.load_state_dict(saved)
    for model, opt in ((a, optim), (b, other)):
        opt.step(0.1, model, GradientsParams.from_grads(backward(model(x).sum()), model))
    assert torch.allclose(a.weight, b.weight, rtol=1e-6, atol=0) and other.state_dict()["state"][0]["step"].item() == 2


def test_each_step_uses_its_own_learning_rate():
    m = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        m.weight.fill_(0.0)
    optim = SgdConfig().init()
    for lr in (0.5, 0.25, 2.0):
        optim.step(lr, m, GradientsParams({m.weight: torch.ones(1, 1)}))
    assert m.weight.item() == -2.75


def test_optimizer_rebinds_when_the_model_changes():
    a, b = nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False)
    optim = SgdConfig(momentum=MomentumConfig(momentum=0.5, dampening=0.0)).init()
    for _ in range(2):
        optim.step(1.0, a, GradientsParams({a.weight: torch.ones(1, 1)}))
    before = b.weight.item()
    optim.step(1.0, b, GradientsParams({b.weight: torch.ones(1, 1)}))
    assert b.weight.item() == pytest.approx(before - 1.0)  # fresh momentum for the new model


def test_torch_factories_are_optimizers_and_other_values_are_refused():
    from functools import partial

    optim = as_optimizer(partial(torch.optim.SGD, momentum=0.9))
    built = optim.build([param(1.0)], 0.25)
    assert isinstance(built, torch.optim.SGD) and built.defaults["lr"] == 0.25 and built.defaults["momentum"] == 0.9
    assert optim.grad_clipping is None
    config = AdamConfig()
    assert isinstance(as_optimizer(config), Optimizer) and as_optimizer(config).spec is config
    assert as_optimizer(optim) is optim
    with raises_exactly(TypeError, "optimizer must be a burnlike optimizer (AdamConfig().init()), an optimizer config, "
                                   "or a callable(params, lr=...) returning a torch.optim.Optimizer; got int"):
        as_optimizer(3)
    with pytest.raises(NotImplementedError):
        OptimizerConfig().torch_optimizer([], 1.0)


# --- configs translated to torch ---------------------------------------------------------------------


def test_config_values_reach_torch():
    ps = [param(1.0)]
    adam = AdamConfig(beta_1=0.8, beta_2=0.95, epsilon=1e-3, amsgrad=True).init().build(ps, 0.1).defaults
    assert (adam["betas"], adam["eps"], adam["amsgrad"], adam["weight_decay"]) == ((0.8, 0.95), 1e-3, True, 0.0)
    adamw = AdamWConfig(beta_1=0.8, beta_2=0.95, epsilon=1e-3, weight_decay=0.2, amsgrad=True).init().build(ps, 0.1)
    assert isinstance(adamw, torch.optim.AdamW)
    assert (adamw.defaults["betas"], adamw.defaults["eps"], adamw.defaults["weight_decay"],
            adamw.defaults["amsgrad"]) == ((0.8, 0.95), 1e-3, 0.2, True)
    cautious = AdamWConfig(beta_1=0.8, beta_2=0.95, epsilon=1e-3, weight_decay=0.2, amsgrad=True,
                           cautious_weight_decay=True).init().build(ps, 0.1).defaults
    assert (cautious["betas"], cautious["eps"], cautious["weight_decay"], cautious["amsgrad"],
            cautious["cautious_weight_decay"]) == ((0.8, 0.95), 1e-3, 0.2, True, True)
    sgd = SgdConfig().init().build(ps, 0.1).defaults
    assert (sgd["momentum"], sgd["dampening"], sgd["nesterov"], sgd["weight_decay"]) == (0.0, 0.0, False, 0.0)
    sgd = SgdConfig(weight_decay=WeightDecayConfig(0.3), momentum=MomentumConfig(0.7, 0.0, True)).init()
    sgd = sgd.build(ps, 0.1).defaults
    assert (sgd["momentum"], sgd["dampening"], sgd["nesterov"], sgd["weight_decay"]) == (0.7, 0.0, True, 0.3)
    ada = AdaGradConfig().init().build(ps, 0.1).defaults
    assert (ada["lr_decay"], ada["eps"], ada["weight_decay"]) == (0.0, 1e-5, 0.0)
    rms = RmsPropConfig().init().build(ps, 0.1).defaults
    assert (rms["alpha"], rms["eps"], rms["momentum"], rms["centered"], rms["weight_decay"]) == \
        (0.99, 1e-5, 0.9, False, 0.0)
    rms = RmsPropConfig(alpha=0.5, momentum=0.1, epsilon=0.01, centered=True,
                        weight_decay=WeightDecayConfig(0.2)).init().build(ps, 0.1).defaults
    assert (rms["alpha"], rms["eps"], rms["momentum"], rms["centered"], rms["weight_decay"]) == \
        (0.5, 0.01, 0.1, True, 0.2)


@pytest.mark.parametrize("config", [AdamConfig(), AdamWConfig(), AdamWConfig(cautious_weight_decay=True), SgdConfig(),
                                    AdaGradConfig(), RmsPropConfig(), AdanConfig(), MuonConfig(), LBFGSConfig()],
                         ids=lambda c: type(c).__name__)
def test_every_config_builds_at_the_given_learning_rate(config):
    built = config.init().build([nn.Parameter(torch.ones(2, 2))], 0.125)
    assert [g["lr"] for g in built.param_groups] == [0.125] and built.defaults["lr"] == 0.125


def test_cautious_weight_decay_at_a_zero_moment():
    """Burn's mask is (θ ≥ 0) == (m ≥ 0): with no gradient (m = 0) a positive weight decays, a
    negative one doesn't."""
    p = param(0.5, -0.5)
    opt = BurnAdamW([p], 0.1, weight_decay=0.5, cautious_weight_decay=True)
    p.grad = torch.zeros(2, dtype=torch.float64)
    opt.step()
    assert p.tolist() == pytest.approx([0.5 - 0.1 * 0.5 * 0.5, -0.5], abs=1e-12)


def adamw_reference(p, grads, lr, b1, b2, eps, wd, amsgrad=False, cautious=False):
    """Burn's AdamW (float64): decoupled decay (masked where θ and m disagree in sign when cautious),
    then the bias-corrected Adam step; the parameter after each gradient."""
    p, m, v, vmax, out = p.copy(), 0.0, 0.0, 0.0, []
    for t, g in enumerate(grads, 1):
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        second = vmax if amsgrad else v
        decay = lr * wd * p
        if cautious:
            decay = np.where((p >= 0) == (m >= 0), decay, 0.0)
        p = p - decay - lr * (m / (1 - b1**t)) / (np.sqrt(second / (1 - b2**t)) + eps)
        out.append(p.copy())
    return out


GRADS = [np.array([0.3, -0.2, 0.0]), np.array([-0.5, -0.1, 0.4]), np.array([0.1, 0.05, 0.2])]


@pytest.mark.parametrize(("lr", "wd"), [(0.1, 0.5), (2.0, 0.5)])  # lr·wd = 1: the weight is zeroed first
def test_burn_adamw_without_cautious_decay_matches_burns_rule(lr, wd):
    p = param(0.5, -0.25, 1.0)
    opt = BurnAdamW([p], lr, betas=(0.8, 0.9), eps=0.01, weight_decay=wd)
    got = []
    for g in GRADS:
        p.grad = torch.tensor(g)
        opt.step()
        got.append(p.detach().numpy().copy())
    np.testing.assert_allclose(got, adamw_reference(np.array([0.5, -0.25, 1.0]), GRADS, lr, 0.8, 0.9, 0.01, wd),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize(("amsgrad", "cautious"), [(True, True), (False, False)])
def test_muon_updates_other_parameters_with_the_aux_adamw_settings(amsgrad, cautious):
    aux = AdamWConfig(beta_1=0.8, beta_2=0.9, epsilon=0.01, weight_decay=0.5, amsgrad=amsgrad,
                      cautious_weight_decay=cautious)
    bias = param(0.5, -0.25, 1.0)
    opt = Muon([bias], 0.1, MuonConfig(aux_adamw=aux))
    got = []
    for g in GRADS:
        bias.grad = torch.tensor(g)
        opt.step()
        got.append(bias.detach().numpy().copy())
    want = adamw_reference(np.array([0.5, -0.25, 1.0]), GRADS, 0.1, 0.8, 0.9, 0.01, 0.5, amsgrad, cautious)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_adan_adds_epsilon_to_the_denominator():
    """Burn's Adan at its first step: Δ = m̂ / (√v̂ + ε) = g / (|g| + ε) (the difference term is 0)."""
    p = param(1.0, -1.0)
    opt = Adan([p], 0.1, eps=1.0)
    p.grad = torch.tensor([1.0, 3.0], dtype=torch.float64)
    opt.step()
    assert p.tolist() == pytest.approx([1.0 - 0.1 * 1 / 2, -1.0 - 0.1 * 3 / 4], abs=1e-12)


def test_burn_adamw_defaults_are_burns():
    d = BurnAdamW([param(1.0)], 0.1).defaults
    assert (d["lr"], d["betas"], d["eps"], d["weight_decay"], d["amsgrad"], d["cautious_weight_decay"]) == \
        (0.1, (0.9, 0.999), 1e-5, 1e-4, False, False)
    d = Adan([param(1.0)], 0.1).defaults
    assert (d["betas"], d["eps"], d["weight_decay"], d["no_prox"]) == ((0.98, 0.92, 0.99), 1e-8, 0.0, False)
    d = AdanConfig(beta_1=0.5, beta_2=0.6, beta_3=0.7, epsilon=0.1, weight_decay=0.2, no_prox=True).init()
    d = d.build([param(1.0)], 0.1).defaults
    assert (d["lr"], d["betas"], d["eps"], d["weight_decay"], d["no_prox"]) == (0.1, (0.5, 0.6, 0.7), 0.1, 0.2, True)


def test_lbfgs_config_values_reach_torch():
    assert LBFGSConfig().grad_clipping is None and LBFGSConfig().init().grad_clipping is None
    d = LBFGSConfig().init().build([param(1.0)], 1.0).defaults
    assert (d["max_iter"], d["max_eval"], d["history_size"], d["tolerance_grad"], d["tolerance_change"],
            d["line_search_fn"]) == (20, 25, 100, 1e-7, 1e-9, None)
    d = LBFGSConfig(max_iter=3, history_size=4, tolerance_grad=1e-3, tolerance_change=1e-4, max_eval=9,
                    line_search_fn="StrongWolfe").init().build([param(1.0)], 0.5).defaults
    assert (d["lr"], d["max_iter"], d["max_eval"], d["history_size"], d["tolerance_grad"], d["tolerance_change"],
            d["line_search_fn"]) == (0.5, 3, 9, 4, 1e-3, 1e-4, "strong_wolfe")
    assert LineSearchFn("None") is LineSearchFn.NONE


def test_lbfgs_custom_loop_refuses_gradients_and_returns_the_losss_full_precision():
    m = nn.Linear(1, 1, bias=False).double()
    with torch.no_grad():
        m.weight.fill_(1.0 / 3.0)
    optim = LBFGSConfig(max_iter=1).init()
    for not_a_closure in (GradientsParams(), [1.0]):
        with pytest.raises(TypeError) as e:
            optim.step(1.0, m, not_a_closure)
        assert str(e.value) == ("L-BFGS needs a closure model -> (loss, GradientsParams), not gradients: "
                                "step(lr, model, closure), as Burn's LBFGS::step")

    def closure(model):
        loss = (model.weight * model.weight).sum()  # float64
        return loss, GradientsParams.from_grads(backward(loss), model)

    _, loss = optim.step(1.0, m, closure)
    assert loss == (1.0 / 3.0) ** 2  # exactly: a float64 loss is not rounded to float32 on the way


def test_lbfgs_custom_loop_accepts_a_float_loss_and_clears_the_gradients():
    m = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        m.weight.fill_(3.0)

    def closure(model):  # f(w) = w²: the loss as a Python float, the gradient 2w
        w = model.weight
        return float(w.item() ** 2), GradientsParams({w: 2 * w.detach()})

    model, loss = LBFGSConfig(max_iter=1).init().step(1.0, m, closure)
    assert model is m and loss == 9.0 and m.weight.grad is None
    assert m.weight.item() == pytest.approx(3.0 - 1.0 / 6.0 * 6.0)  # first step: lr·min(1, 1/|g|₁)·g


# --- Muon ----------------------------------------------------------------------------------------------


def test_muon_refusal_names_the_parameters_that_are_not_matrices():
    model = nn.Sequential(*(nn.Linear(2, 2) for _ in range(4)), nn.Conv1d(1, 1, 1))
    named = list(model.named_parameters())
    with raises_exactly(ValueError, "MuonConfig: Muon only optimizes 2-D weight matrices, but 6 parameters are not "
                                    "2-D (0.bias, 1.bias, 2.bias, 3.bias, 4.weight, …); set "
                                    "MuonConfig(aux_adamw=AdamWConfig()) to update them with AdamW"):
        Muon(named, 0.1, MuonConfig())
    five = nn.Sequential(*(nn.Linear(2, 2) for _ in range(5)))
    with pytest.raises(ValueError, match=r"are not 2-D \(0.bias, 1.bias, 2.bias, 3.bias, 4.bias\); set MuonConfig"):
        Muon(list(five.named_parameters()), 0.1, MuonConfig())  # five names: all shown, no ellipsis
    with pytest.raises(ValueError, match=r"but 1 parameters are not 2-D \(shape \[2\]\); set MuonConfig"):
        Muon(list(nn.Linear(2, 2).parameters()), 0.1, MuonConfig())
    with pytest.raises(ValueError, match=r"are not 2-D \(0.bias\); set MuonConfig"):
        Muon(list(nn.Sequential(nn.Linear(2, 2)).named_parameters()), 0.1, MuonConfig())


def test_muon_groups_carry_the_aux_adamw_settings():
    aux = AdamWConfig(beta_1=0.8, beta_2=0.9, epsilon=1e-3, weight_decay=0.3, amsgrad=True,
                      cautious_weight_decay=True)
    cfg = MuonConfig(aux_adamw=aux, weight_decay=WeightDecayConfig(0.2), epsilon=1e-4, ns_steps=3,
                     ns_coefficients=(1.0, 2.0, 3.0), momentum=MomentumConfig(0.5, 0.25, False))
    m = nn.Linear(2, 2)
    opt = Muon(list(m.named_parameters()), 0.05, cfg)
    muon, adamw = opt.param_groups
    assert muon["params"] == [m.weight] and adamw["params"] == [m.bias]
    assert (muon["rule"], muon["lr"], muon["momentum"], muon["dampening"], muon["nesterov"], muon["ns"],
            muon["ns_steps"], muon["eps"], muon["penalty"], muon["adjust"]) == \
        ("muon", 0.05, 0.5, 0.25, False, (1.0, 2.0, 3.0), 3, 1e-4, 0.2, "Original")
    assert (adamw["rule"], adamw["betas"], adamw["eps"], adamw["weight_decay"], adamw["amsgrad"],
            adamw["cautious_weight_decay"]) == ("adamw", (0.8, 0.9), 1e-3, 0.3, True, True)
    only_matrices = Muon([m.weight], 0.05, MuonConfig(aux_adamw=aux))
    assert len(only_matrices.param_groups) == 1 and only_matrices.param_groups[0]["penalty"] == 0.0
    assert MuonConfig().grad_clipping is None


def test_muon_defaults_are_burns():
    cfg = MuonConfig()
    assert cfg.momentum == MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)
    assert (cfg.ns_coefficients, cfg.epsilon, cfg.ns_steps, cfg.weight_decay, cfg.aux_adamw) == \
        ((3.4445, -4.775, 2.0315), 1e-7, 5, None, None)


def test_newton_schulz_orthogonalises_and_scales_small_updates_by_epsilon():
    from burnlike.optim.muon import newton_schulz

    torch.manual_seed(0)
    g = torch.randn(3, 5, dtype=torch.float64)
    x = newton_schulz(g, (3.4445, -4.775, 2.0315), 5, 1e-7)
    s = torch.linalg.svdvals(x)
    assert bool(((s > 0.6) & (s < 1.25)).all())  # singular values pushed towards 1 (Muon's quintic)
    tall = newton_schulz(g.T, (3.4445, -4.775, 2.0315), 5, 1e-7)
    assert torch.allclose(tall, x.T)  # a tall matrix is handled through its transpose
    assert torch.allclose(newton_schulz(g, (1.0, 0.0, 0.0), 0, 1e-7), g / g.norm())
    tiny = torch.full((2, 2), 1e-9, dtype=torch.float64)
    assert torch.equal(newton_schulz(tiny, (1.0, 0.0, 0.0), 1, 1.0), tiny)  # ‖g‖ < ε: divided by ε


def test_muon_ratio_of_vectors_is_one():
    from burnlike.optim import AdjustLrFn

    assert AdjustLrFn.ORIGINAL.ratio(torch.Size([7])) == 1.0
    assert AdjustLrFn.MATCH_RMS_ADAMW.ratio(torch.Size([7])) == 1.0
    assert AdjustLrFn.ORIGINAL.ratio(torch.Size([2, 8])) == 1.0  # wide: max(1, rows/cols)
    assert AdjustLrFn.MATCH_RMS_ADAMW.ratio(torch.Size([2, 8])) == pytest.approx(0.2 * math.sqrt(8))


# --- LR schedulers ---------------------------------------------------------------------------------------


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


@pytest.mark.parametrize("sizes", [{"warmup_steps": 0}, {"model_size": -1}])
def test_noam_refusal_message(sizes):
    with raises_exactly(ValueError, "NoamLrSchedulerConfig: warmup_steps and model_size must be > 0"):
        NoamLrSchedulerConfig(1.0, **sizes).init()


def test_cosine_and_linear_edges():
    cos = CosineAnnealingLrSchedulerConfig(1.0, 4, min_lr=0.2).init()
    want = [0.2 + 0.4 * (1 + math.cos(k / 4 * math.pi)) for k in (1, 2, 3, 4, 0)]
    assert [cos.step() for _ in range(5)] == pytest.approx(want)
    assert CosineAnnealingLrSchedulerConfig(1.0, 1).init().lr_at(1) == pytest.approx(0.0)
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


def test_composed_scheduler_builders_and_json(tmp_path):
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
