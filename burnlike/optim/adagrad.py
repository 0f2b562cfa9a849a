"""Burn 0.19's `AdaGradConfig`, run by `torch.optim.Adagrad` (the same rule).

Burn: s ← s + g², lr_t = lr / (1 + (t-1)·lr_decay), θ ← θ - lr_t·g / (√s + ε); an optional L2
penalty is added to the gradient first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from burnlike.config import config
from burnlike.optim.optimizer import GradientClippingConfig, OptimizerConfig, WeightDecayConfig


@config
class AdaGradConfig(OptimizerConfig):
    """Burn's `AdaGradConfig`: each value's step divided by the root of its summed squared gradients."""

    lr_decay: float = 0.0  # step t's learning rate is lr / (1 + (t - 1) * lr_decay)
    epsilon: float = 1e-5  # added to the denominator for stability
    # null, or {penalty: x}: an L2 penalty added to the gradient
    weight_decay: WeightDecayConfig | None = None
    # null, or {kind: norm|value, threshold: x}: clip each parameter's gradient
    grad_clipping: GradientClippingConfig | None = None

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        return torch.optim.Adagrad(params, lr=lr, lr_decay=self.lr_decay, eps=self.epsilon,
                                   weight_decay=self.weight_decay.penalty if self.weight_decay else 0.0)
