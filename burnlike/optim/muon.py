"""Burn 0.20's `MuonConfig`: momentum, then Newton–Schulz orthogonalisation of each 2-D update.

Burn's step per weight matrix: v ← μv + (1-dampening)g (v = g at the first step), update = g + μv
(Nesterov) or v; X = update (transposed if taller than wide) / max(‖update‖_F, ε); `ns_steps` times
A = XXᵀ, X ← aX + (bA + cA²)X; θ ← θ(1 - lr·wd) - lr·ratio·X, where ratio = √max(1, rows/cols)
(`AdjustLrFn.ORIGINAL`) or 0.2·√max(rows, cols) (`MATCH_RMS_ADAMW`).

burnlike's own implementation: `torch.optim.Muon` runs Newton–Schulz in bfloat16 and keeps an
exponential moving average instead of Burn's momentum, so its steps differ from Burn's.

Muon only takes 2-D parameters (Burn panics on others). `aux_adamw` (burnlike's addition) updates
the rest — biases, norms, convolution kernels — with Burn's AdamW rule at the same learning rate;
without it, a model with such parameters is refused with their names.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from enum import Enum
from typing import Any

import torch
from torch import Tensor, nn

from burnlike.config import BURNLIKE_ONLY, config
from burnlike.optim.adamw import adamw_update
from burnlike.optim.optimizer import AdamWConfig, MomentumConfig, OptimizerConfig, WeightDecayConfig
from burnlike.optim.rule import RuleOptimizer


class AdjustLrFn(str, Enum):
    """Burn's `AdjustLrFn::{Original, MatchRmsAdamW}`; the UPPERCASE names are aliases."""

    Original = "Original"  # Keller Jordan: lr·√max(1, rows/cols)
    MatchRmsAdamW = "MatchRmsAdamW"  # Moonshot: lr·0.2·√max(rows, cols)
    ORIGINAL = "Original"
    MATCH_RMS_ADAMW = "MatchRmsAdamW"

    def ratio(self, shape: torch.Size) -> float:
        """The factor on the learning rate for a parameter of `shape` (1 below two dimensions).

        Args:
            shape: The parameter's shape.
        """
        if len(shape) < 2:
            return 1.0
        rows, cols = shape[0], shape[1]
        if self is AdjustLrFn.ORIGINAL:
            return math.sqrt(max(1.0, rows / cols))
        return 0.2 * math.sqrt(max(rows, cols))


@config
class MuonConfig(OptimizerConfig):
    """Burn's `MuonConfig`: momentum, then each 2-D update made nearly orthogonal by a Newton-Schulz
    iteration. Only matrices: other parameters need `aux_adamw`."""

    weight_decay: WeightDecayConfig | None = None  # null, or {penalty: x}: weight decay on the matrices
    # Burn's momentum ({momentum, dampening, nesterov}) before orthogonalising
    momentum: MomentumConfig = MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)
    # (a, b, c) of the quintic Newton-Schulz iteration
    ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315)
    epsilon: float = 1e-7  # added to the norm before the Newton-Schulz iteration
    ns_steps: int = 5  # Newton-Schulz iterations per update
    adjust_lr_fn: AdjustLrFn = AdjustLrFn.ORIGINAL  # how the learning rate scales with each matrix's shape
    # burnlike: the optimizer for non-2-D parameters (not in Burn's JSON while None)
    aux_adamw: AdamWConfig | None = dataclasses.field(default=None, metadata={BURNLIKE_ONLY: True})

    @property
    def grad_clipping(self) -> None:  # type: ignore[override]  # read-only None: Burn's config has no clipping  # Burn's MuonConfig has no gradient clipping
        return None

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        return Muon(params, lr, self)


class Muon(RuleOptimizer):
    """Muon for the 2-D parameters; the others go to `config.aux_adamw` (or are refused).

    Args:
        params: The parameters, or `(name, parameter)` pairs (names make the refusal clearer).
        lr: The learning rate.
        config: The Muon settings.

    Raises:
        ValueError: A parameter is not 2-D and `config.aux_adamw` is None.
    """

    def __init__(self, params: Iterable[Any], lr: float, config: MuonConfig) -> None:
        params = list(params)
        named = [p for p in params if isinstance(p, tuple)]
        flat: list[nn.Parameter] = [p[1] if isinstance(p, tuple) else p for p in params]
        other = [p for p in flat if p.dim() != 2]
        aux = config.aux_adamw
        if other and aux is None:
            names = [n for n, p in named if p.dim() != 2] or [f"shape {list(p.shape)}" for p in other]
            raise ValueError(
                f"MuonConfig: Muon only optimizes 2-D weight matrices, but {len(other)} parameters are not 2-D "
                f"({', '.join(names[:5])}{', …' if len(names) > 5 else ''}); set MuonConfig(aux_adamw=AdamWConfig()) "
                "to update them with AdamW")
        mu = config.momentum
        a, b, c = config.ns_coefficients
        groups: list[dict[str, Any]] = [{"params": [p for p in flat if p.dim() == 2], "rule": "muon"}]
        if other and aux is not None:
            groups.append({"params": other, "rule": "adamw", "betas": (aux.beta_1, aux.beta_2), "eps": aux.epsilon,
                           "weight_decay": aux.weight_decay, "amsgrad": aux.amsgrad,
                           "cautious_weight_decay": aux.cautious_weight_decay})
        penalty = config.weight_decay.penalty if config.weight_decay is not None else 0.0
        defaults = {"lr": lr, "momentum": mu.momentum, "dampening": mu.dampening, "nesterov": mu.nesterov,
                    "ns": (a, b, c), "ns_steps": config.ns_steps, "eps": config.epsilon, "penalty": penalty,
                    "adjust": AdjustLrFn(config.adjust_lr_fn).value}
        super().__init__([g for g in groups if g["params"]], defaults)

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        """Muon's step for a matrix, AdamW's for a parameter of the `aux_adamw` group.

        Args:
            param: The parameter.
            grad: Its gradient.
            state: Its momentum (or AdamW moments).
            group: Its param group's settings (`rule`: "muon" or "adamw").
        """
        lr = group["lr"]
        if group["rule"] == "adamw":
            beta_1, beta_2 = group["betas"]
            adamw_update(param, grad, state, lr, beta_1, beta_2, group["eps"], group["weight_decay"],
                         group["amsgrad"], group["cautious_weight_decay"])
            return
        mu = group["momentum"]
        if "velocity" not in state:
            state["velocity"] = grad.clone()
        else:
            state["velocity"].mul_(mu).add_(grad, alpha=1 - group["dampening"])
        velocity = state["velocity"]
        update = grad + mu * velocity if group["nesterov"] else velocity
        ortho = newton_schulz(update, group["ns"], group["ns_steps"], group["eps"])
        if group["penalty"]:
            param.mul_(1 - lr * group["penalty"])  # decay with the unadjusted lr, after orthogonalisation
        param.sub_(ortho, alpha=lr * AdjustLrFn(group["adjust"]).ratio(param.shape))


def newton_schulz(g: Tensor, coefficients: tuple[float, float, float], steps: int, eps: float) -> Tensor:
    """Burn's quintic Newton–Schulz iteration towards the nearest orthogonal matrix, in g's dtype."""
    a, b, c = coefficients
    tall = g.shape[-2] > g.shape[-1]
    x = g.mT if tall else g
    x = x / x.pow(2).sum().sqrt().clamp_min(eps)
    for _ in range(steps):
        gram = x @ x.mT
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.mT if tall else x
