"""`burnlike.optim.rmsprop`: RmsPropConfig, Burn's RMSProp. Its defaults are Burn's, its settings reach
torch's RMSprop, and its steps follow Burn's rule (plain or centered, with momentum) on Burn's own
test layer."""

import numpy as np
import pytest

from burnlike.optim import RmsPropConfig, WeightDecayConfig
from tests.optim.helpers import assert_matches_rule, param, run_custom_loop


def test_rmsprop_config_values_reach_torch():
    ps = [param(1.0)]
    rms = RmsPropConfig().init().build(ps, 0.1).defaults
    assert (rms["alpha"], rms["eps"], rms["momentum"], rms["centered"], rms["weight_decay"]) ==\
        (0.99, 1e-5, 0.9, False, 0.0)
    rms = RmsPropConfig(alpha=0.5, momentum=0.1, epsilon=0.01, centered=True,
                        weight_decay=WeightDecayConfig(0.2)).init().build(ps, 0.1).defaults
    assert (rms["alpha"], rms["eps"], rms["momentum"], rms["centered"], rms["weight_decay"]) ==\
        (0.5, 0.01, 0.1, True, 0.2)


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
    assert_matches_rule(run_custom_loop(cfg, lr), rule, dict)
