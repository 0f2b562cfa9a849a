"""`burnlike.optim.muon`: Muon and MuonConfig, Burn 0.20's Muon (burnlike's own: torch's differs).
Its defaults are Burn's; the steps of weight matrices follow Burn's rule (momentum, Newton–Schulz
orthogonalisation, the lr scaled by the matrix's shape) on Burn's test layer; other parameters are
refused by name unless `aux_adamw` updates them with Burn's AdamW rule; its state and param groups
survive a checkpoint resume."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from burnlike.optim import AdamWConfig, AdjustLrFn, MomentumConfig, Muon, MuonConfig, WeightDecayConfig
from burnlike.optim.muon import newton_schulz
from burnlike.record import CompactRecorder
from burnlike.train import LearnerBuilder
from burnlike.train.metric import LossMetric
from tests.helpers.expect import raises_exactly
from tests.helpers.toy import Classifier, loader
from tests.optim.helpers import (
    GRADS,
    XS,
    B,
    adam_rule,
    adamw_reference,
    assert_matches_rule,
    burn_layer,
    param,
    run_custom_loop,
)


def newton_schulz_reference(g, steps=5, a=3.4445, b=-4.775, c=2.0315, eps=1e-7):
    """Burn's Newton–Schulz iteration (float64) with its default coefficients."""
    tall = g.shape[0] > g.shape[1]
    x = g.T if tall else g
    x = x / max(np.sqrt((x * x).sum()), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


# --- the config -----------------------------------------------------------------------------------
def test_muon_defaults_are_burns():
    cfg = MuonConfig()
    assert cfg.momentum == MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)
    assert (cfg.ns_coefficients, cfg.epsilon, cfg.ns_steps, cfg.weight_decay, cfg.aux_adamw) ==\
        ((3.4445, -4.775, 2.0315), 1e-7, 5, None, None)


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
            muon["ns_steps"], muon["eps"], muon["penalty"], muon["adjust"]) ==\
        ("muon", 0.05, 0.5, 0.25, False, (1.0, 2.0, 3.0), 3, 1e-4, 0.2, "Original")
    assert (adamw["rule"], adamw["betas"], adamw["eps"], adamw["weight_decay"], adamw["amsgrad"],
            adamw["cautious_weight_decay"]) == ("adamw", (0.8, 0.9), 1e-3, 0.3, True, True)
    only_matrices = Muon([m.weight], 0.05, MuonConfig(aux_adamw=aux))
    assert len(only_matrices.param_groups) == 1 and only_matrices.param_groups[0]["penalty"] == 0.0
    assert MuonConfig().grad_clipping is None


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


# --- the parts of Burn's rule ---------------------------------------------------------------------
def test_newton_schulz_orthogonalises_and_scales_small_updates_by_epsilon():
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


NS = (3.4445, -4.775, 2.0315)


def test_a_tall_matrix_is_orthogonalised_exactly_as_its_transpose():
    """Burn iterates on the wide orientation (the smaller Gram matrix): a tall matrix's result is its
    transpose's, transposed, to the last bit, not the same matrix up to rounding."""
    torch.manual_seed(0)
    g = torch.randn(7, 3)
    assert torch.equal(newton_schulz(g, NS, 5, 1e-7), newton_schulz(g.mT, NS, 5, 1e-7).mT)


def test_a_square_matrix_is_iterated_as_given_not_transposed():
    torch.manual_seed(0)
    g = torch.randn(5, 5)
    a, b, c = NS
    x = g / g.pow(2).sum().sqrt().clamp_min(1e-7)
    for _ in range(5):
        gram = x @ x.mT
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    assert torch.equal(newton_schulz(g, NS, 5, 1e-7), x)


def test_a_tall_matrix_with_a_leading_batch_dimension_is_orthogonalised_through_its_transpose():
    """Burn's iteration takes any rank and looks at the last two dimensions only."""
    torch.manual_seed(0)
    g = torch.randn(1, 7, 3)
    assert torch.equal(newton_schulz(g, NS, 5, 1e-7), newton_schulz(g.mT, NS, 5, 1e-7).mT)


def test_adjust_lr_ratio_is_one_for_vectors_and_wide_matrices_under_original():
    assert AdjustLrFn.ORIGINAL.ratio(torch.Size([7])) == 1.0
    assert AdjustLrFn.MATCH_RMS_ADAMW.ratio(torch.Size([7])) == 1.0
    assert AdjustLrFn.ORIGINAL.ratio(torch.Size([2, 8])) == 1.0  # wide: max(1, rows/cols)
    assert AdjustLrFn.MATCH_RMS_ADAMW.ratio(torch.Size([2, 8])) == pytest.approx(0.2 * math.sqrt(8))


# --- steps ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("adjust", list(AdjustLrFn))
@pytest.mark.parametrize("momentum", [MomentumConfig(0.95, 0.0, True), MomentumConfig(0.9, 0.1, False)])
def test_muon_matches_burn_rule(momentum, adjust):
    lr, wd = 0.02, 0.1
    torch.manual_seed(0)
    tall = nn.Linear(4, 6, bias=False)  # a [6, 4] weight: Burn transposes it and scales the lr by √1.5

    def rule(p, g, s, t):
        s["v"] = momentum.momentum * s["v"] + (1 - momentum.dampening) * g if "v" in s else g
        update = g + momentum.momentum * s["v"] if momentum.nesterov else s["v"]
        rows, cols = p.shape
        ratio = math.sqrt(max(1.0, rows / cols)) if adjust is AdjustLrFn.ORIGINAL else 0.2 * math.sqrt(max(rows, cols))
        return p * (1 - lr * wd) - lr * ratio * newton_schulz_reference(update)

    cfg = MuonConfig(weight_decay=WeightDecayConfig(wd), momentum=momentum, adjust_lr_fn=adjust)
    assert_matches_rule(run_custom_loop(cfg, lr, tall, [x[:, :4] for x in XS]), rule, dict, atol=5e-6)


def test_muon_scales_lr_by_shape_and_updates_non_matrices_with_aux_adamw():
    assert AdjustLrFn.ORIGINAL.ratio(torch.Size([1024, 512])) == pytest.approx(math.sqrt(2))
    assert AdjustLrFn.MATCH_RMS_ADAMW.ratio(torch.Size([1024, 512])) == pytest.approx(0.2 * 32)
    with pytest.raises(ValueError, match="2-D.*aux_adamw"):
        MuonConfig().init().build(list(burn_layer().parameters()), 0.02)
    # with AdamW for the bias: the weight follows Muon, the bias Burn's AdamW rule
    seen = run_custom_loop(MuonConfig(aux_adamw=AdamWConfig(weight_decay=0.0)), 0.02)
    bias_rule = adam_rule(0.02, 0.9, 0.999, 1e-5, False)
    p, s = B.copy(), {}
    for t, (after, grads) in enumerate(seen[1:], 1):
        p = bias_rule(p, grads[1], s, t)
        np.testing.assert_allclose(after[1], p, atol=2e-6)


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


# --- resume ---------------------------------------------------------------------------------------
def test_muon_state_and_param_groups_survive_a_checkpoint_resume(tmp_path):
    """Muon's state and param groups (both rules, their settings) go through the checkpoint records."""
    def builder(epochs):
        return (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).num_epochs(epochs).devices(["cpu"])
                .progress_bar(False).with_application_logger(False).with_file_checkpointer(CompactRecorder()))

    config = MuonConfig(aux_adamw=AdamWConfig(cautious_weight_decay=True), adjust_lr_fn=AdjustLrFn.MATCH_RMS_ADAMW)
    torch.manual_seed(0)
    first = builder(1).build(Classifier(), config, 1e-2)
    first.fit(loader(64))
    saved = first.trainer.optimizers[0].state_dict()
    resumed = builder(1).checkpoint(1).build(Classifier(), config, 1e-2)
    resumed.trainer.fit(resumed.module, loader(64), ckpt_path=str(resumed.resume_path()))  # trainer-1.mpk: Burn's per-epoch layout
    restored = resumed.trainer.optimizers[0].state_dict()
    assert [{k: v for k, v in g.items() if k != "params"} for g in restored["param_groups"]] ==\
        [{k: v for k, v in g.items() if k != "params"} for g in saved["param_groups"]]
    for i, state in saved["state"].items():
        for key, value in state.items():
            assert torch.equal(torch.as_tensor(restored["state"][i][key]), torch.as_tensor(value)), (i, key)


def test_adjust_lr_fn_has_burns_variant_names():
    """burn-optim/src/optim/muon.rs (v0.21.0): `AdjustLrFn::{Original, MatchRmsAdamW}`."""
    assert AdjustLrFn.Original is AdjustLrFn.ORIGINAL and AdjustLrFn.MatchRmsAdamW is AdjustLrFn.MATCH_RMS_ADAMW
    assert MuonConfig().adjust_lr_fn is AdjustLrFn.Original
