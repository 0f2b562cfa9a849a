"""Burn 0.19's `RmsPropConfig`, run by `torch.optim.RMSprop` (the same rule, Burn's defaults).

Burn: v ← αv + (1-α)g² (centered: minus the squared running mean of g), g' = g / (√v + ε), with
momentum b ← μb + g', θ ← θ - lr·b. Burn's defaults differ from torch's: momentum 0.9, ε 1e-5.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from burnlike.config import config
from burnlike.optim.optimizer import GradientClippingConfig, OptimizerConfig, WeightDecayConfig


@config
class RmsPropConfig(OptimizerConfig):
    """Burn's `RmsPropConfig`: the step divided by the root of a running mean of squared gradients."""

    alpha: float = 0.99  # decay rate of the squared gradient's running mean
    momentum: float = 0.9  # momentum factor of the update (0: none)
    epsilon: float = 1e-5  # added to the denominator for stability
    centered: bool = False  # divide by the gradient's estimated variance instead of its second moment
    # null, or {penalty: x}: an L2 penalty added to the gradient
    weight_decay: WeightDecayConfig | None = None
    # null, or {kind: norm|value, threshold: x}: clip each parameter's gradient
    grad_clipping: GradientClippingConfig | None = None

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        return torch.optim.RMSprop(params, lr=lr, alpha=self.alpha, eps=self.epsilon, momentum=self.momentum,
                                   centered=self.centered,
                                   weight_decay=self.weight_decay.penalty if self.weight_decay else 0.0)
