"""Optimizers added for Burn 0.19-0.21: each one's first steps against a hand computation of Burn's
update rule (numpy, float64, written from burn-optim's source), L-BFGS under the Learner, and the
composed LR scheduler."""

import math

import numpy as np
import pytest
import torch
from torch import nn
from toy import Classifier, loader

from burnlike.autodiff import backward
from burnlike.config import ConfigError
from burnlike.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    GradientsParams,
    LBFGSConfig,
    LinearLrSchedulerConfig,
    LineSearchFn,
    MomentumConfig,
    MuonConfig,
    RmsPropConfig,
    SchedulerReduction,
    WeightDecayConfig,
)
from burnlike.train import LearnerBuilder
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import LossMetric

# Burn's optimizer tests use this layer and these inputs (burn-optim/src/optim/adamw.rs)
W = np.array([[-0.3206, 0.1374, 0.4043, 0.3200, 0.0859, 0.0671],
              [0.0777, -0.0185, -0.3667, 0.2550, 0.1955, -0.2922],
              [-0.0190, 0.0346, -0.2962, 0.2484, -0.2780, 0.3130],
              [-0.2980, -0.2214, -0.3715, -0.2981, -0.0761, 0.1626],
              [0.3300, -0.2182, 0.3717, -0.1729, 0.3796, -0.0304],
              [-0.0159, -0.0120, 0.1258, 0.1921, 0.0293, 0.3833]])
B = np.array([-0.3905, 0.0884, -0.0970, 0.1176, 0.1366, 0.0130])
XS = [np.array([[0.6294, 0.0940, 0.8176, 0.8824, 0.5228, 0.4310], [0.7152, 0.9559, 0.7893, 0.5684, 0.5939, 0.8883]]),
      np.array([[0.8491, 0.2108, 0.8939, 0.4433, 0.5527, 0.2528], [0.3270, 0.0412, 0.5538, 0.9605, 0.3195, -0.9085]]),
      np.array([[0.1, -0.7, 0.3, 0.2, -0.5, 0.9], [-0.4, 0.6, -0.2, 0.8, 0.1, -0.3]])]


def linear(bias: bool = True) -> nn.Linear:
    m = nn.Linear(6, 6, bias=bias)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(W.T))  # Burn stores [d_in, d_out]
        if bias:
            m.bias.copy_(torch.tensor(B))
    return m


def run(config, lr, model=None, xs=XS, loss=lambda y: (y * y).sum() + y.sum()):
    """Burn's custom loop (on the test layer unless given a model); returns the parameters after each
    step and each step's grads."""
    model, optim = model or linear(), config.init()
    seen = [([p.detach().double().numpy().copy() for p in model.parameters()], None)]
    for x in xs:
        grads = GradientsParams.from_grads(backward(loss(model(torch.tensor(x, dtype=torch.float32)))), model)
        g = [grads.get(p).double().numpy().copy() for p in model.parameters()]
        model = optim.step(lr, model, grads)
        seen.append(([p.detach().double().numpy().copy() for p in model.parameters()], g))
    return seen


def check(seen, rule, state_factory, atol=1e-6):
    """Replay `rule(param, grad, state, t)` (float64) on the same gradients; compare every step."""
    params = seen[0][0]
    states = [state_factory() for _ in params]
    for t, (after, grads) in enumerate(seen[1:], 1):
        params = [rule(p, g, s, t) for p, g, s in zip(params, grads, states)]
        for got, want in zip(after, params):
            np.testing.assert_allclose(got, want, atol=atol, rtol=0)


def test_adagrad_matches_burn_rule():
    lr, decay, eps, wd = 0.05, 0.5, 1e-5, 0.1

    def rule(p, g, s, t):
        g = g + wd * p
        s["sum"] = s.get("sum", 0) + g * g
        return p - lr / (1 + (t - 1) * decay) * g / (np.sqrt(s["sum"]) + eps)

    assert AdaGradConfig().epsilon == 1e-5 and AdaGradConfig().lr_decay == 0.0
    check(run(AdaGradConfig(lr_decay=decay, weight_decay=WeightDecayConfig(wd)), lr), rule, dict)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_matches_burn_rule(centered):
    lr, alpha, mom, eps = 0.01, 0.99, 0.9, 1e-5

    def rule(p, g, s, t):
        s["sq"] = alpha * s.get("sq", 0) + (1 - alpha) * g * g
        avg = s["sq"]
        if centered:
            s["ga"] = alpha * s.get("ga", 0) + (1 - alpha) * g
            avg = avg - s["ga"] ** 2
        g = g / (np.sqrt(avg) + eps)
        s["buf"] = mom * s["buf"] + g if "buf" in s else g
        return p - lr * s["buf"]

    cfg = RmsPropConfig(centered=centered)
    assert (cfg.alpha, cfg.momentum, cfg.epsilon) == (0.99, 0.9, 1e-5)
    check(run(cfg, lr), rule, dict)


def adam_rule(lr, b1, b2, eps, amsgrad, l2=0.0, decoupled=0.0, cautious=False):
    def rule(p, g, s, t):
        g = g + l2 * p
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        s["vmax"] = np.maximum(s.get("vmax", s["v"]), s["v"])
        v = s["vmax"] if amsgrad else s["v"]
        delta = (s["m"] / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
        decay = lr * decoupled * p
        if cautious:
            decay = np.where((p >= 0) == (s["m"] >= 0), decay, 0.0)
        return p - decay - lr * delta
    return rule


def test_adam_amsgrad_matches_burn_rule():
    lr = 0.05
    seen = run(AdamConfig(amsgrad=True, weight_decay=WeightDecayConfig(0.1)), lr)
    check(seen, adam_rule(lr, 0.9, 0.999, 1e-5, True, l2=0.1), dict, atol=2e-6)
    # the max of the second moment matters on this data (else the test would not see AMSGrad)
    with pytest.raises(AssertionError):
        check(seen, adam_rule(lr, 0.9, 0.999, 1e-5, False, l2=0.1), dict, atol=2e-6)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_cautious_weight_decay_matches_burn_rule(amsgrad):
    lr, wd = 0.1, 0.5
    seen = run(AdamWConfig(weight_decay=wd, cautious_weight_decay=True, amsgrad=amsgrad), lr)
    check(seen, adam_rule(lr, 0.9, 0.999, 1e-5, amsgrad, decoupled=wd, cautious=True), dict, atol=2e-6)
    plain = run(AdamWConfig(weight_decay=wd, amsgrad=amsgrad), lr)  # torch.optim.AdamW
    check(plain, adam_rule(lr, 0.9, 0.999, 1e-5, amsgrad, decoupled=wd), dict, atol=2e-6)
    assert not np.allclose(seen[-1][0][0], plain[-1][0][0], atol=1e-4)  # the mask changed some weights


@pytest.mark.parametrize("no_prox", [False, True])
def test_adan_matches_burn_rule(no_prox):
    lr, b1, b2, b3, eps, wd = 0.05, 0.98, 0.92, 0.99, 1e-8, 0.5

    def rule(p, g, s, t):
        if t == 1:
            s.update(m=(1 - b1) * g, n=(1 - b3) * g * g, d=np.zeros_like(g))
        else:
            diff = g - s["prev"]
            s["m"] = b1 * s["m"] + (1 - b1) * g
            s["d"] = b2 * s["d"] + (1 - b2) * diff
            s["n"] = b3 * s["n"] + (1 - b3) * (g + b2 * diff) ** 2
        s["prev"] = g
        denom = np.sqrt(s["n"]) / math.sqrt(1 - b3**t) + eps
        update = s["m"] / (1 - b1**t) / denom + b2 * s["d"] / (1 - b2**t) / denom
        return p * (1 - lr * wd) - lr * update if no_prox else (p - lr * update) / (1 + lr * wd)

    assert (AdanConfig().beta_1, AdanConfig().beta_2, AdanConfig().beta_3, AdanConfig().epsilon) == (b1, b2, b3, eps)
    cfg = AdanConfig(weight_decay=wd, no_prox=no_prox)
    check(run(cfg, lr), rule, dict, atol=2e-6)


def newton_schulz(g, steps=5, a=3.4445, b=-4.775, c=2.0315, eps=1e-7):
    tall = g.shape[0] > g.shape[1]
    x = g.T if tall else g
    x = x / max(np.sqrt((x * x).sum()), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


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
        return p * (1 - lr * wd) - lr * ratio * newton_schulz(update)

    cfg = MuonConfig(weight_decay=WeightDecayConfig(wd), momentum=momentum, adjust_lr_fn=adjust)
    check(run(cfg, lr, tall, [x[:, :4] for x in XS]), rule, dict, atol=5e-6)


def test_muon_lr_adjustment_and_non_matrix_parameters():
    assert AdjustLrFn.ORIGINAL.ratio(torch.Size([1024, 512])) == pytest.approx(math.sqrt(2))
    assert AdjustLrFn.MATCH_RMS_ADAMW.ratio(torch.Size([1024, 512])) == pytest.approx(0.2 * 32)
    with pytest.raises(ValueError, match="2-D.*aux_adamw"):
        MuonConfig().init().build(list(linear().parameters()), 0.02)
    # with AdamW for the bias: the weight follows Muon, the bias Burn's AdamW rule
    seen = run(MuonConfig(aux_adamw=AdamWConfig(weight_decay=0.0)), 0.02)
    bias_rule = adam_rule(0.02, 0.9, 0.999, 1e-5, False)
    p, s = B.copy(), {}
    for t, (after, grads) in enumerate(seen[1:], 1):
        p = bias_rule(p, grads[1], s, t)
        np.testing.assert_allclose(after[1], p, atol=2e-6)


def lbfgs_reference(x0, grad_fn, lr, steps):
    """Burn's LBFGS::step with max_iter=1 (no line search), called `steps` times: first a scaled
    gradient step, then the two-loop recursion over the (s, y) history."""
    x, history, d, t, prev_g = x0.copy(), [], None, None, None
    out = []
    for k in range(steps):
        g = grad_fn(x)
        if k == 0:
            d = -g
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr
        else:
            y, s = g - prev_g, d * t
            if y @ s > 1e-10:
                history.append((s, y))
            q, alphas = -g, []
            for s_i, y_i in reversed(history):
                alpha = (s_i @ q) / (y_i @ s_i)
                alphas.append(alpha)
                q = q - alpha * y_i
            s_l, y_l = history[-1]
            r = q * (y_l @ s_l) / (y_l @ y_l)
            for (s_i, y_i), alpha in zip(history, reversed(alphas)):
                beta = (y_i @ r) / (y_i @ s_i)
                r = r + s_i * (alpha - beta)
            d, t = r, lr
        prev_g = g
        x = x + t * d
        out.append(x.copy())
    return out


def test_lbfgs_custom_loop_matches_burn_rule():
    a = np.array([[3.0, 0.5], [0.5, 1.0]])
    target = np.array([1.0, -2.0])

    def grad_fn(x):  # f(x) = ½ xᵀAx - targetᵀx
        return a @ x - target

    model = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.5, 0.5]]))
    ta, tt = torch.tensor(a, dtype=torch.float32), torch.tensor(target, dtype=torch.float32)

    def closure(m):
        w = m.weight[0]
        loss = 0.5 * w @ ta @ w - tt @ w
        return loss, GradientsParams.from_grads(backward(loss), m)

    optim = LBFGSConfig(max_iter=1).init()
    got = []
    for _ in range(3):
        model, loss = optim.step(0.5, model, closure)
        assert isinstance(loss, float)
        got.append(model.weight.detach()[0].double().numpy().copy())
    for g, want in zip(got, lbfgs_reference(np.array([0.5, 0.5]), grad_fn, 0.5, 3)):
        np.testing.assert_allclose(g, want, atol=1e-6)
    with pytest.raises(TypeError, match="closure"):
        optim.step(0.5, model, GradientsParams())
    for search, torch_name in ((LineSearchFn.NONE, None), (LineSearchFn.STRONG_WOLFE, "strong_wolfe")):
        built = LBFGSConfig(line_search_fn=search).init().build(list(model.parameters()), 1.0)
        assert built.defaults["line_search_fn"] == torch_name and built.defaults["max_eval"] == 25


def test_lbfgs_trains_under_the_learner(tmp_path):
    torch.manual_seed(0)
    learner = (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).num_epochs(2).devices(["cpu"])
               .progress_bar(False).with_application_logger(False)
               .build(Classifier(), LBFGSConfig(max_iter=5, history_size=10), 0.5))
    calls = {"n": 0}
    step = learner.model.train_step

    def counting(batch):
        calls["n"] += 1
        return step(batch)

    learner.model.train_step = counting
    result = learner.fit(loader(128, 32))
    assert result.trainer.global_step == 8 and calls["n"] > 8  # the closure ran several times a batch
    lines = (tmp_path / "train" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert len(lines) == 4  # ... but each batch is counted once by the metrics
    first, last = (read_metric_log(tmp_path / "train" / f"epoch-{e}" / "Loss.log") for e in (1, 2))
    assert last < 0.5 * first


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


def test_own_optimizers_resume_from_burn_checkpoints(tmp_path):
    """Muon's state and param groups (both rules, their settings) go through the checkpoint records."""
    from burnlike.record import CompactRecorder

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
    assert [{k: v for k, v in g.items() if k != "params"} for g in restored["param_groups"]] == \
        [{k: v for k, v in g.items() if k != "params"} for g in saved["param_groups"]]
    for i, state in saved["state"].items():
        for key, value in state.items():
            assert torch.equal(torch.as_tensor(restored["state"][i][key]), torch.as_tensor(value)), (i, key)
