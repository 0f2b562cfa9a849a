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
    alpha: float = 0.99
    momentum: float = 0.9
    epsilon: float = 1e-5
    centered: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        return torch.optim.RMSprop(params, lr=lr, alpha=self.alpha, eps=self.epsilon, momentum=self.momentum,
                                   centered=self.centered,
                                   weight_decay=self.weight_decay.penalty if self.weight_decay else 0.0)
