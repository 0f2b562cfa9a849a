"""Shared by the `burnlike.optim` tests: Burn's own optimizer test layer and inputs
(burn-optim/src/optim/adamw.rs), its custom training loop (`run_custom_loop`), and float64
references of Burn's update rules to replay that loop's gradients against
(`assert_matches_rule`, `adam_rule`, `adamw_reference`)."""

import numpy as np
import torch
from torch import nn

from burnlike.autodiff import backward
from burnlike.optim import GradientsParams

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

# three gradients for a 3-element parameter, set by hand (a zero, sign changes)
GRADS = [np.array([0.3, -0.2, 0.0]), np.array([-0.5, -0.1, 0.4]), np.array([0.1, 0.05, 0.2])]


def param(*values: float) -> nn.Parameter:
    return nn.Parameter(torch.tensor(values, dtype=torch.float64))


def burn_layer(bias: bool = True) -> nn.Linear:
    """Burn's optimizer test layer: Linear(6, 6) with the weights W (and bias B)."""
    m = nn.Linear(6, 6, bias=bias)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(W.T))  # Burn stores [d_in, d_out]
        if bias:
            m.bias.copy_(torch.tensor(B))
    return m


def run_custom_loop(config, lr, model=None, xs=XS, loss=lambda y: (y * y).sum() + y.sum()):
    """Burn's custom loop (on `burn_layer()` unless given a model); returns the parameters after each
    step and each step's grads."""
    model, optim = model or burn_layer(), config.init()
    seen = [([p.detach().double().numpy().copy() for p in model.parameters()], None)]
    for x in xs:
        grads = GradientsParams.from_grads(backward(loss(model(torch.tensor(x, dtype=torch.float32)))), model)
        g = [grads.get(p).double().numpy().copy() for p in model.parameters()]
        model = optim.step(lr, model, grads)
        seen.append(([p.detach().double().numpy().copy() for p in model.parameters()], g))
    return seen


def assert_matches_rule(seen, rule, state_factory, atol=1e-6):
    """Replay `rule(param, grad, state, t)` (float64) on the same gradients; compare every step."""
    params = seen[0][0]
    states = [state_factory() for _ in params]
    for t, (after, grads) in enumerate(seen[1:], 1):
        params = [rule(p, g, s, t) for p, g, s in zip(params, grads, states)]
        for got, want in zip(after, params):
            np.testing.assert_allclose(got, want, atol=atol, rtol=0)


def adam_rule(lr, b1, b2, eps, amsgrad, l2=0.0, decoupled=0.0, cautious=False):
    """Burn's Adam step (float64): L2 penalty `l2` added to the gradient, or AdamW's decoupled decay
    (masked where θ and m disagree in sign when `cautious`), then the bias-corrected Adam step."""
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


def adamw_reference(p, grads, lr, b1, b2, eps, wd, amsgrad=False, cautious=False):
    """Burn's AdamW (`adam_rule` with decoupled decay) on one parameter: its value after each gradient."""
    rule, state, out = adam_rule(lr, b1, b2, eps, amsgrad, decoupled=wd, cautious=cautious), {}, []
    for t, g in enumerate(grads, 1):
        p = rule(p, g, state, t)
        out.append(p.copy())
    return out
