"""`burnlike.optim.adagrad`: AdaGradConfig, Burn's AdaGrad. Its defaults are Burn's, its settings
reach torch's Adagrad, and its steps follow Burn's rule (lr decayed per step, L2 weight decay added
to the gradient) on Burn's own test layer."""

import numpy as np

from burnlike.optim import AdaGradConfig, WeightDecayConfig
from tests.optim.helpers import assert_matches_rule, param, run_custom_loop


def test_adagrad_config_values_reach_torch():
    ada = AdaGradConfig().init().build([param(1.0)], 0.1).defaults
    assert (ada["lr_decay"], ada["eps"], ada["weight_decay"]) == (0.0, 1e-5, 0.0)


def test_adagrad_matches_burn_rule():
    lr, decay, eps, wd = 0.05, 0.5, 1e-5, 0.1

    def rule(p, g, s, t):
        g = g + wd * p
        s["sum"] = s.get("sum", 0) + g * g
        return p - lr / (1 + (t - 1) * decay) * g / (np.sqrt(s["sum"]) + eps)

    assert AdaGradConfig().epsilon == 1e-5 and AdaGradConfig().lr_decay == 0.0
    assert_matches_rule(run_custom_loop(AdaGradConfig(lr_decay=decay, weight_decay=WeightDecayConfig(wd)), lr), rule,
                        dict)
