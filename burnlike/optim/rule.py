"""Burn's `SimpleOptimizer`: a per-tensor update rule, run as a `torch.optim.Optimizer`.

For Burn's optimizers that torch lacks (or computes differently): subclasses implement `update`;
this class runs the closure (Lightning's automatic optimization passes one) and visits every
parameter with a gradient, so Lightning, checkpoints and LR schedulers see a normal optimizer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor


class RuleOptimizer(torch.optim.Optimizer):
    """A torch optimizer whose step applies `update` to each parameter that has a gradient; a
    subclass writes the rule only (Burn's `SimpleOptimizer::step`)."""

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        """The rule: update `param` in place from `grad`.

        Args:
            param: The parameter.
            grad: Its gradient.
            state: This parameter's optimizer state, kept between steps (empty at the first).
            group: Its param group's settings (`lr` and the optimizer's own).
        """
        raise NotImplementedError

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter with a gradient.

        Args:
            closure: Recomputes the loss (with gradients), called first (torch's convention).

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.update(p, p.grad, self.state[p], group)
        return loss
