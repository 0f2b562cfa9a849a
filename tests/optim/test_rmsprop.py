"""TODO: docstring."""

import numpy as np
import pytest

from burnlike.optim import (
    RmsPropConfig,
)
from tests.optim.helpers import check, run


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
