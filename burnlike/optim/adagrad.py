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
    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        return torch.optim.Adagrad(params, lr=lr, lr_decay=self.lr_decay, eps=self.epsilon,
                                   weight_decay=self.weight_decay.penalty if self.weight_decay else 0.0)
