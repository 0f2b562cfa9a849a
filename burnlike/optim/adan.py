"""Burn 0.21's `AdanConfig`: Adaptive Nesterov momentum (arXiv:2208.06677), in Burn's form.

Per tensor, with d = g - g_prev (0 at the first step):
m ← β₁m + (1-β₁)g, n_d ← β₂n_d + (1-β₂)d, v ← β₃v + (1-β₃)(g + β₂d)²  (first step: m=(1-β₁)g,
v=(1-β₃)g², n_d=0); denom = √v / √(1-β₃ᵗ) + ε; Δ = m/(1-β₁ᵗ)/denom + β₂·n_d/(1-β₂ᵗ)/denom;
θ ← (θ - lr·Δ) / (1 + lr·wd) (proximal), or θ(1 - lr·wd) - lr·Δ with `no_prox`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from burnlike.config import config
from burnlike.optim.optimizer import GradientClippingConfig, OptimizerConfig
from burnlike.optim.rule import RuleOptimizer


@config
class AdanConfig(OptimizerConfig):
    """Burn's `AdanConfig`: Adam's moments plus a running mean of the gradient's change (Nesterov's
    look-ahead without the extra forward pass)."""

    beta_1: float = 0.98  # decay rate of the gradient's running mean
    beta_2: float = 0.92  # decay rate of the running mean of successive gradients' difference
    beta_3: float = 0.99  # decay rate of the running mean of the squared corrected gradient
    epsilon: float = 1e-8  # added to the denominator for stability
    weight_decay: float = 0.0  # decoupled weight decay
    no_prox: bool = False  # true: decay as AdamW does (subtract); false: the paper's proximal division
    # null, or {kind: norm|value, threshold: x}: clip each parameter's gradient
    grad_clipping: GradientClippingConfig | None = None

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        return Adan(params, lr, (self.beta_1, self.beta_2, self.beta_3), self.epsilon, self.weight_decay, self.no_prox)


class Adan(RuleOptimizer):
    """Burn's Adan update as a torch optimizer.

    Args:
        params: The parameters (or param groups) to optimize.
        lr: The learning rate.
        betas: Decay rates of the gradient's mean, of successive gradients' difference and of the
            squared corrected gradient.
        eps: Added to the denominator for stability.
        weight_decay: Decoupled weight decay.
        no_prox: Decay as AdamW does (subtract) instead of the paper's proximal division.
    """

    def __init__(self, params: Iterable[Any], lr: float, betas: tuple[float, float, float] = (0.98, 0.92, 0.99),
                 eps: float = 1e-8, weight_decay: float = 0.0, no_prox: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "no_prox": no_prox})

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        """Burn's Adan step of `param` (its first step seeds the moments from `grad`).

        Args:
            param: The parameter.
            grad: Its gradient.
            state: Its moments, previous gradient and step count.
            group: Its param group's settings.
        """
        b1, b2, b3 = group["betas"]
        lr, decay = group["lr"], group["lr"] * group["weight_decay"]
        if not state:
            state["step"] = 1
            state["exp_avg"] = grad * (1 - b1)
            state["exp_avg_sq"] = grad * grad * (1 - b3)
            state["exp_avg_diff"] = torch.zeros_like(grad)
            state["pre_grad"] = grad.clone()
        else:
            diff = grad - state["pre_grad"]
            state["exp_avg"].mul_(b1).add_(grad, alpha=1 - b1)
            state["exp_avg_diff"].mul_(b2).add_(diff, alpha=1 - b2)
            state["exp_avg_sq"].mul_(b3).add_((grad + b2 * diff).square_(), alpha=1 - b3)
            state["pre_grad"].copy_(grad)
            state["step"] += 1
        t = state["step"]
        denom = state["exp_avg_sq"].sqrt() / (1 - b3**t) ** 0.5 + group["eps"]
        update = (state["exp_avg"] / (1 - b1**t) + state["exp_avg_diff"] * (b2 / (1 - b2**t))).div_(denom)
        if group["no_prox"]:
            param.mul_(1 - decay).sub_(update, alpha=lr)
        else:
            param.sub_(update, alpha=lr).div_(1 + decay)
