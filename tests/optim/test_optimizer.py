"""`burnlike.optim.optimizer`: Burn's optimizer API over torch.optim. AdamConfig, AdamWConfig and
SgdConfig keep Burn's defaults and hand their settings to torch; every config builds at the learning
rate it is given; `as_optimizer` takes a config, an optimizer or a torch factory; an Optimizer's
custom-loop `step(lr, model, grads)` follows torch's (and Burn's) rule with the lr of that step,
clips gradients per tensor first (or globally, burnlike's `GlobalNorm`), rebinds to a new model, and
saves and loads its state. AdamW's `weight_decay_min_ndim` leaves tensors of fewer dimensions
undecayed (nanoGPT's groups)."""

import copy
import math
from functools import partial

import pytest
import torch
from torch import nn

from burnlike.autodiff import backward
from burnlike.config import config
from burnlike.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    BurnSgd,
    GradientClippingConfig,
    GradientsParams,
    LBFGSConfig,
    MomentumConfig,
    MuonConfig,
    Optimizer,
    OptimizerConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)
from burnlike.optim.optimizer import as_optimizer
from tests.helpers.expect import raises_exactly
from tests.optim.helpers import adam_rule, assert_matches_rule, param, run_custom_loop


# --- configs: Burn's defaults, torch's settings ---------------------------------------------------
def test_adam_adamw_and_momentum_configs_have_burns_defaults():
    adam = AdamConfig()
    assert (adam.beta_1, adam.beta_2, adam.epsilon) == (0.9, 0.999, 1e-5)
    assert AdamWConfig().weight_decay == 1e-4
    assert MomentumConfig().dampening == 0.1


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


def test_weight_decay_reaches_torch():
    opt = AdamConfig(weight_decay=WeightDecayConfig(0.1)).init().build(nn.Linear(1, 1).parameters(), 1e-3)
    assert opt.param_groups[0]["weight_decay"] == 0.1 and opt.param_groups[0]["eps"] == 1e-5
    sgd = SgdConfig(momentum=MomentumConfig()).init().build(nn.Linear(1, 1).parameters(), 1e-3)
    assert sgd.param_groups[0]["momentum"] == 0.9 and sgd.param_groups[0]["dampening"] == 0.1


@pytest.mark.parametrize("config", [AdamConfig(), AdamWConfig(), AdamWConfig(cautious_weight_decay=True), SgdConfig(),
                                    AdaGradConfig(), RmsPropConfig(), AdanConfig(), MuonConfig(), LBFGSConfig()],
                         ids=lambda c: type(c).__name__)
def test_every_config_builds_at_the_given_learning_rate(config):
    built = config.init().build([nn.Parameter(torch.ones(2, 2))], 0.125)
    assert [g["lr"] for g in built.param_groups] == [0.125] and built.defaults["lr"] == 0.125


def test_torch_factories_are_optimizers_and_other_values_are_refused():
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


# --- the custom loop's step -----------------------------------------------------------------------
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


def test_each_step_uses_its_own_learning_rate():
    m = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        m.weight.fill_(0.0)
    optim = SgdConfig().init()
    for lr in (0.5, 0.25, 2.0):
        optim.step(lr, m, GradientsParams({m.weight: torch.ones(1, 1)}))
    assert m.weight.item() == -2.75


def test_adam_amsgrad_matches_burn_rule():
    lr = 0.05
    seen = run_custom_loop(AdamConfig(amsgrad=True, weight_decay=WeightDecayConfig(0.1)), lr)
    assert_matches_rule(seen, adam_rule(lr, 0.9, 0.999, 1e-5, True, l2=0.1), dict, atol=2e-6)
    # the max of the second moment matters on this data (else the test would not see AMSGrad)
    with pytest.raises(AssertionError):
        assert_matches_rule(seen, adam_rule(lr, 0.9, 0.999, 1e-5, False, l2=0.1), dict, atol=2e-6)


def test_optimizer_rebinds_when_the_model_changes():
    a, b = nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False)
    optim = SgdConfig(momentum=MomentumConfig(momentum=0.5, dampening=0.0)).init()
    for _ in range(2):
        optim.step(1.0, a, GradientsParams({a.weight: torch.ones(1, 1)}))
    before = b.weight.item()
    optim.step(1.0, b, GradientsParams({b.weight: torch.ones(1, 1)}))
    assert b.weight.item() == pytest.approx(before - 1.0)  # fresh momentum for the new model


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


# --- gradient clipping ----------------------------------------------------------------------------
def test_gradient_clipping_applies_per_parameter_tensor_not_globally():
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


def test_global_norm_clipping_scales_every_gradient_by_one_factor():
    """nanoGPT's (and Lightning's gradient_clip_val's) rule: total = ‖all gradients‖₂; if total > x,
    each gradient is multiplied by x / (total + 1e-6)."""
    p, q, r = param(0.0, 0.0), param(0.0), param(0.0)
    p.grad = torch.tensor([3.0, 0.0], dtype=torch.float64)
    q.grad = torch.tensor([4.0], dtype=torch.float64)
    GradientClippingConfig.GlobalNorm(1.0).clip([p, q, r])
    factor = 1.0 / (5.0 + 1e-6)
    assert p.grad.tolist() == pytest.approx([3.0 * factor, 0.0], rel=1e-12)
    assert q.grad.tolist() == pytest.approx([4.0 * factor], rel=1e-12) and r.grad is None
    GradientClippingConfig.GlobalNorm(10.0).clip([p, q])  # under the threshold: unchanged
    assert q.grad.tolist() == pytest.approx([4.0 * factor], rel=1e-12)
    assert GradientClippingConfig.GlobalNorm(0.5).serde_value() == {"GlobalNorm": 0.5}
    assert GradientClippingConfig.from_serde({"GlobalNorm": 0.5}) == GradientClippingConfig("global_norm", 0.5)


def test_global_norm_clipping_is_torchs_clip_grad_norm_over_a_model():
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
    b = copy.deepcopy(a)
    x = torch.randn(16, 4) * 100
    for model in (a, b):
        model(x).pow(2).sum().backward()
    GradientClippingConfig.GlobalNorm(1.0).clip(a.parameters())
    torch.nn.utils.clip_grad_norm_(b.parameters(), 1.0)
    assert all(torch.equal(pa.grad, pb.grad) for pa, pb in zip(a.parameters(), b.parameters()))
    assert math.isclose(torch.cat([p.grad.flatten() for p in a.parameters()]).norm().item(), 1.0, rel_tol=1e-5)


# --- weight decay groups ----------------------------------------------------------------------------------
def test_adamw_decays_every_parameter_by_default_as_burn():
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    optim = AdamWConfig(weight_decay=0.1).init().build(list(model.parameters()), 1e-3)
    assert len(optim.param_groups) == 1 and optim.param_groups[0]["weight_decay"] == 0.1
    assert "weight_decay_min_ndim" not in AdamWConfig().to_dict()  # Burn's JSON, while unset


@pytest.mark.parametrize("cautious", [False, True])
def test_weight_decay_min_ndim_decays_the_matrices_only(cautious):
    """nanoGPT's groups: tensors of 2+ dimensions decay; biases and norm gains (1-D) don't. A step with
    zero gradients moves only the decayed ones: θ ← θ·(1 - lr·wd)."""
    from burnlike.models.gpt import GptConfig

    model = GptConfig(vocab_size=11, block_size=4, n_layer=1, n_head=1, n_embd=4, bias=True).init()
    params = list(model.parameters())
    config = AdamWConfig(weight_decay=0.5, weight_decay_min_ndim=2, cautious_weight_decay=cautious)
    optim = config.init().build(params, 0.1)
    decayed, kept = optim.param_groups
    names = {id(p): n for n, p in model.named_parameters()}
    assert decayed["weight_decay"] == 0.5 and kept["weight_decay"] == 0.0
    assert sorted(names[id(p)] for p in kept["params"]) == sorted(n for n, p in model.named_parameters() if p.dim() < 2)
    assert {names[id(p)].rsplit(".", 1)[-1] for p in kept["params"]} == {"bias", "weight"}  # biases, LayerNorm gains
    assert all(p.dim() >= 2 for p in decayed["params"]) and len(decayed["params"]) + len(kept["params"]) == len(params)
    before = [p.detach().clone() for p in params]
    for p in params:
        p.grad = torch.zeros_like(p)
    optim.step()
    for p, old in zip(params, before):
        expected = old * (1 - 0.1 * 0.5) if p.dim() >= 2 else old
        if cautious and p.dim() >= 2:  # Burn's mask at a zero moment: only weights >= 0 decay
            expected = torch.where(old >= 0, old * (1 - 0.1 * 0.5), old)
        torch.testing.assert_close(p.detach(), expected, rtol=1e-6, atol=0)


def test_weight_decay_min_ndim_leaves_out_an_empty_group_and_refuses_bad_values():
    only_vectors = [nn.Parameter(torch.ones(3))]
    optim = AdamWConfig(weight_decay_min_ndim=2).init().build(only_vectors, 0.1)
    assert [g["weight_decay"] for g in optim.param_groups] == [0.0]
    with raises_exactly(ValueError, "weight_decay_min_ndim must be null or an integer >= 0, got -1"):
        AdamWConfig(weight_decay_min_ndim=-1).init().build(only_vectors, 0.1)
    with pytest.raises(TypeError, match="got param groups already"):
        AdamWConfig(weight_decay_min_ndim=2).init().build([{"params": only_vectors}], 0.1)


def test_norm_clipping_works_on_devices_without_foreach_kernels():
    """torch refuses foreach=True on devices without its foreach kernels (MPS, meta): Burn's norm
    clipping lets torch choose. The meta device stands in for MPS on a CPU-only machine."""
    p = nn.Parameter(torch.ones(3, device="meta"))
    p.grad = torch.ones(3, device="meta")
    GradientClippingConfig.Norm(0.1).clip([p])  # raised "foreach=True was passed, but can't use the foreach API"
    assert p.grad.device.type == "meta"


def test_clipping_skips_parameters_without_gradient_and_defaults_to_norm_one():
    p, q = param(0.0, 0.0), param(0.0)
    p.grad = torch.tensor([3.0, 4.0], dtype=torch.float64)
    GradientClippingConfig().clip([q, p])
    assert q.grad is None and p.grad.tolist() == pytest.approx([0.6, 0.8])
    assert GradientClippingConfig.Value(2.0) == GradientClippingConfig("value", 2.0)
    assert GradientClippingConfig.Norm(2.0) == GradientClippingConfig("norm", 2.0)


def test_norm_clips_by_norm_even_in_a_subclass_whose_default_kind_is_value():
    """`Norm` is a classmethod: a subclass's own field defaults must not decide the variant."""

    @config
    class ValueByDefault(GradientClippingConfig):
        kind: str = "value"

    clipping = ValueByDefault.Norm(1.0)
    assert clipping.kind == "norm" and clipping.serde_value() == {"Norm": 1.0}


def test_clipping_refuses_an_unknown_kind_naming_it():
    p = param(5.0)
    p.grad = torch.tensor([5.0], dtype=torch.float64)
    with raises_exactly(ValueError, "GradientClippingConfig.kind must be 'norm', 'value' or 'global_norm', got 'max'"):
        GradientClippingConfig(kind="max").clip([p])


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


# --- Burn's Nesterov momentum with dampening ---------------------------------------------------------
@pytest.mark.parametrize("weight_decay", [None, 0.5])
def test_nesterov_with_burns_default_dampening_trains_as_burns_momentum(weight_decay):
    """burn-optim/src/optim/momentum.rs (v0.21.0), `Momentum::transform`: velocity = grad on the first
    step, then grad·(1 - dampening) + velocity·momentum; Nesterov's update is velocity·momentum + grad
    (sgd.rs: weight decay first, grad + penalty·param). Burn's default dampening 0.1 with Nesterov
    trains (torch's SGD refuses it). Gradients 1 then 2, momentum 0.9, lr 0.1, from w = 1:
    step 1: v = 1, update 1.9 (no decay); step 2: v = 2·0.9 + 1·0.9 = 2.7, update 0.9·2.7 + 2 = 4.43."""
    config = SgdConfig(momentum=MomentumConfig().with_nesterov(True),
                       weight_decay=WeightDecayConfig(weight_decay) if weight_decay else None)
    assert (config.momentum.momentum, config.momentum.dampening) == (0.9, 0.1)
    w = nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    optim = config.init().build([w], 0.1)
    assert isinstance(optim, torch.optim.SGD) and optim.defaults["nesterov"] is True
    by_hand, velocity = 1.0, None
    for g in (1.0, 2.0):
        grad = g + (weight_decay or 0.0) * by_hand
        velocity = grad if velocity is None else grad * (1 - 0.1) + velocity * 0.9
        by_hand -= 0.1 * (velocity * 0.9 + grad)
        w.grad = torch.tensor([g], dtype=torch.float64)
        optim.step()
    assert w.item() == pytest.approx(by_hand, rel=1e-12)
    if weight_decay is None:
        assert w.item() == pytest.approx(1.0 - 0.19 - 0.443, rel=1e-12)


def test_nesterov_reaches_the_custom_loop_step_too():
    """The same rule through Burn's custom-loop `optim.step(lr, model, grads)` (burn-optim momentum.rs)."""
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    optim = SgdConfig(momentum=MomentumConfig(nesterov=True)).init()
    x = torch.ones(1, 1)
    for _ in range(2):
        loss = model(x).sum()  # d loss / d w = 1
        model = optim.step(0.1, model, GradientsParams.from_grads(backward(loss), model))
    # v1 = 1, update 1.9; v2 = 0.9 + 0.9 = 1.8, update 0.9·1.8 + 1 = 2.62
    assert model.weight.item() == pytest.approx(1.0 - 0.19 - 0.262, rel=1e-6)


def test_serde_value_of_an_unknown_kind_names_it():
    with raises_exactly(ValueError, "GradientClippingConfig.kind must be 'norm', 'value' or 'global_norm', got 'max'"):
        GradientClippingConfig(kind="max").serde_value()


def test_the_earlier_kind_threshold_form_refuses_an_unknown_kind_naming_it():
    with raises_exactly(ValueError, "kind must be 'norm', 'value' or 'global_norm', got 'max'"):
        GradientClippingConfig.from_serde({"kind": "max", "threshold": 1.0})


def test_the_earlier_kind_threshold_form_defaults_the_threshold_to_one():
    assert GradientClippingConfig.from_serde({"kind": "value"}) == GradientClippingConfig.Value(1.0)


def test_burn_sgd_is_not_nesterov_unless_asked():
    """Plain momentum when `nesterov` is omitted, as torch's SGD: the update is lr·velocity."""
    w = nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
    optim = BurnSgd([w], lr=0.1, momentum=0.9)
    assert optim.defaults["nesterov"] is False and optim.param_groups[0]["nesterov"] is False
    w.grad = torch.tensor([1.0], dtype=torch.float64)
    optim.step()
    assert w.item() == pytest.approx(0.9, rel=1e-12)  # Nesterov's would be 1 - 0.1·1.9
