"""Burn's AdamW update rule where `torch.optim.AdamW` has no equivalent: cautious weight decay
(Burn 0.19, arXiv:2510.12402), and AdamW for the parameters Muon leaves to it.

Burn's step per tensor: m ← β₁m + (1-β₁)g, v ← β₂v + (1-β₂)g² (AMSGrad: v̂ ← max(v̂, v)),
Δ = (m / (1-β₁ᵗ)) / (√(v / (1-β₂ᵗ)) + ε); then θ ← θ - lr·wd·θ·mask - lr·Δ, where the mask is 1
everywhere, or with cautious decay 1 only where θ and m have the same sign (θ ≥ 0 ⇔ m ≥ 0).
The plain case stays on `torch.optim.AdamW` (same formula, fused kernels).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor

from burnlike.optim.rule import RuleOptimizer


def adamw_update(param: Tensor, grad: Tensor, state: dict[str, Any], lr: float, beta_1: float, beta_2: float,
                 epsilon: float, weight_decay: float, amsgrad: bool = False, cautious: bool = False) -> None:
    """One Burn AdamW step of `param` in place; `state` is this parameter's optimizer state."""
    if not state:
        state["step"] = 0
        state["exp_avg"] = torch.zeros_like(param)
        state["exp_avg_sq"] = torch.zeros_like(param)
        if amsgrad:
            state["max_exp_avg_sq"] = torch.zeros_like(param)
    state["step"] += 1
    t = state["step"]
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.mul_(beta_1).add_(grad, alpha=1 - beta_1)
    exp_avg_sq.mul_(beta_2).addcmul_(grad, grad, value=1 - beta_2)
    second = exp_avg_sq
    if amsgrad:
        second = torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
    decay = lr * weight_decay
    if decay != 0.0:
        if cautious:  # decay only where it pulls the same way as the update
            param.sub_(param * decay * ((param >= 0) == (exp_avg >= 0)))
        else:
            param.mul_(1.0 - decay)
    denom = (second / (1 - beta_2**t)).sqrt_().add_(epsilon)
    param.addcdiv_(exp_avg, denom, value=-lr / (1 - beta_1**t))


class BurnAdamW(RuleOptimizer):
    """Burn's AdamW as a torch optimizer (used for `AdamWConfig(cautious_weight_decay=True)`).

    Args:
        params: The parameters (or param groups) to optimize.
        lr: The learning rate.
        betas: Decay rates of the first and second moments.
        eps: Added to the denominator for stability.
        weight_decay: Decoupled decay: each step shrinks the weights by lr * weight_decay.
        amsgrad: Divide by the largest second moment seen so far.
        cautious_weight_decay: Decay only where the weight and the update agree in sign.
    """

    burn_optimizer = "AdamW"
    """Its state is Burn's AdamW record (`record.format.optimizer_record`)."""

    def __init__(self, params: Iterable[Any], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-5, weight_decay: float = 1e-4, amsgrad: bool = False,
                 cautious_weight_decay: bool = False) -> None:
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "cautious_weight_decay": cautious_weight_decay}
        super().__init__(params, defaults)

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        """Burn's AdamW step of `param` (`adamw_update`).

        Args:
            param: The parameter.
            grad: Its gradient.
            state: Its moments and step count.
            group: Its param group's settings.
        """
        beta_1, beta_2 = group["betas"]
        adamw_update(param, grad, state, group["lr"], beta_1, beta_2, group["eps"], group["weight_decay"],
                     group["amsgrad"], group["cautious_weight_decay"])
