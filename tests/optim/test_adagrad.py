"""TODO: docstring."""

import numpy as np

from burnlike.optim import (
    AdaGradConfig,
    WeightDecayConfig,
)
from tests.optim.helpers import check, run


def test_adagrad_matches_burn_rule():
    lr, decay, eps, wd = 0.05, 0.5, 1e-5, 0.1

    def rule(p, g, s, t):
        g = g + wd * p
        s["sum"] = s.get("sum", 0) + g * g
        return p - lr / (1 + (t - 1) * decay) * g / (np.sqrt(s["sum"]) + eps)

    assert AdaGradConfig().epsilon == 1e-5 and AdaGradConfig().lr_decay == 0.0
    check(run(AdaGradConfig(lr_decay=decay, weight_decay=WeightDecayConfig(wd)), lr), rule, dict)
