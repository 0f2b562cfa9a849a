"""`burnlike.optim.lbfgs`: LBFGSConfig, Burn's L-BFGS run by `torch.optim.LBFGS`. Its settings (and
Burn's line-search names) reach torch; its custom-loop step takes Burn's closure
`model -> (loss, grads)`, not gradients, returns the loss in full precision, and follows Burn's
two-loop recursion step by step."""

import numpy as np
import pytest
import torch
from torch import nn

from burnlike.autodiff import backward
from burnlike.optim import GradientsParams, LBFGSConfig, LineSearchFn
from tests.optim.helpers import param


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


def test_lbfgs_custom_loop_refuses_gradients_and_returns_the_loss_in_full_precision():
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


def test_line_search_fn_has_burns_variant_names():
    """burn-optim/src/optim/lbfgs.rs (v0.21.0): `LineSearchFn::{None, StrongWolfe}`; `None` is a Python
    keyword, so that one is `LineSearchFn.NONE`, whose JSON value is Burn's "None"."""
    assert LineSearchFn.StrongWolfe is LineSearchFn.STRONG_WOLFE and LineSearchFn.NONE.value == "None"
    assert LBFGSConfig.from_dict({"line_search_fn": "StrongWolfe"}).line_search_fn is LineSearchFn.StrongWolfe
