"""`burnlike.optim.adan`: Adan and AdanConfig, Burn's Adan (not in torch). Its defaults are Burn's, the
config's settings reach the optimizer, ε is added to the denominator as Burn adds it, and its steps
follow Burn's rule (with and without the proximal weight decay) on Burn's own test layer."""

import math

import numpy as np
import pytest
import torch

from burnlike.optim import Adan, AdanConfig
from tests.optim.helpers import assert_matches_rule, param, run_custom_loop


def test_adan_defaults_are_burns_and_its_config_reaches_it():
    d = Adan([param(1.0)], 0.1).defaults
    assert (d["betas"], d["eps"], d["weight_decay"], d["no_prox"]) == ((0.98, 0.92, 0.99), 1e-8, 0.0, False)
    d = AdanConfig(beta_1=0.5, beta_2=0.6, beta_3=0.7, epsilon=0.1, weight_decay=0.2, no_prox=True).init()
    d = d.build([param(1.0)], 0.1).defaults
    assert (d["lr"], d["betas"], d["eps"], d["weight_decay"], d["no_prox"]) == (0.1, (0.5, 0.6, 0.7), 0.1, 0.2, True)


def test_adan_adds_epsilon_to_the_denominator():
    """Burn's Adan at its first step: Δ = m̂ / (√v̂ + ε) = g / (|g| + ε) (the difference term is 0)."""
    p = param(1.0, -1.0)
    opt = Adan([p], 0.1, eps=1.0)
    p.grad = torch.tensor([1.0, 3.0], dtype=torch.float64)
    opt.step()
    assert p.tolist() == pytest.approx([1.0 - 0.1 * 1 / 2, -1.0 - 0.1 * 3 / 4], abs=1e-12)


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
    assert_matches_rule(run_custom_loop(cfg, lr), rule, dict, atol=2e-6)
