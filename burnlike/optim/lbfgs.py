"""Burn 0.21's `LBFGSConfig`: limited-memory BFGS, a closure-based optimizer.

Burn's L-BFGS is a port of PyTorch's, so `torch.optim.LBFGS` runs it (same directions, step sizes,
history and stopping tests; Burn only re-evaluates the closure once more at the last iteration).
Under the Learner, Lightning's automatic optimization hands the optimizer a closure that re-runs
`train_step` and the backward pass; the metrics count each batch once. In a custom loop,
`LBFGSConfig().init().step(lr, model, closure)` takes Burn's closure `model -> (loss, grads)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

import torch
from torch import Tensor, nn

from burnlike.config import config
from burnlike.optim.grads import GradientsParams
from burnlike.optim.optimizer import Optimizer, OptimizerConfig


class LineSearchFn(str, Enum):
    """Burn's `LineSearchFn::{None, StrongWolfe}`: `None` is a Python keyword, so that variant is
    `LineSearchFn.NONE` (its JSON value is Burn's "None"); `STRONG_WOLFE` is an alias."""

    NONE = "None"
    StrongWolfe = "StrongWolfe"
    STRONG_WOLFE = "StrongWolfe"


@config
class LBFGSConfig(OptimizerConfig):
    """Burn's `LBFGSConfig`, run by `torch.optim.LBFGS`. A step re-evaluates the loss, so it takes a
    closure (`LBFGS.step(lr, model, closure)`) rather than gradients."""

    max_iter: int = 20  # iterations per optimizer step
    history_size: int = 100  # how many past updates approximate the inverse Hessian
    tolerance_grad: float = 1e-7  # stop a step once the gradient's largest value is below this
    tolerance_change: float = 1e-9  # stop a step once the loss or the weights change less than this
    max_eval: int | None = None  # None: max_iter * 5 // 4
    # NONE: fixed step of size lr; StrongWolfe: a line search
    line_search_fn: LineSearchFn = LineSearchFn.NONE

    @property
    def grad_clipping(self) -> None:  # type: ignore[override]  # read-only None: Burn's config has no clipping  # Burn's LBFGSConfig has no gradient clipping
        return None

    def init(self) -> LBFGS:
        """The optimizer, whose `step` takes a closure."""
        return LBFGS(self)

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        search = LineSearchFn(self.line_search_fn)
        return torch.optim.LBFGS(
            params, lr=lr, max_iter=self.max_iter, max_eval=self.max_eval, tolerance_grad=self.tolerance_grad,
            tolerance_change=self.tolerance_change, history_size=self.history_size,
            line_search_fn="strong_wolfe" if search is LineSearchFn.STRONG_WOLFE else None,
        )


Closure = Callable[[nn.Module], tuple[float | Tensor, GradientsParams]]


class LBFGS(Optimizer):
    """Burn's `LBFGS::step(lr, module, closure) -> (module, loss)` for custom training loops."""

    def step(self, lr: float, model: nn.Module, closure: Closure) -> tuple[nn.Module, float]:  # type: ignore[override]
        """One L-BFGS step of `model`, which may call `closure` several times.

        Args:
            lr: This step's learning rate.
            model: The module to update in place.
            closure: `model -> (loss, GradientsParams)`: the loss and its gradients at the current weights.

        Returns:
            `(model, loss)`, the loss of the closure's first call.

        Raises:
            TypeError: `closure` is gradients or not callable.
        """
        if not callable(closure) or isinstance(closure, GradientsParams):
            raise TypeError("L-BFGS needs a closure model -> (loss, GradientsParams), not gradients: "
                            "step(lr, model, closure), as Burn's LBFGS::step")
        params = [p for p in model.parameters() if p.requires_grad]
        optim = self._bind(params, lr)

        def torch_closure() -> Tensor:
            loss, grads = closure(model)
            for p in params:
                p.grad = grads.get(p)
            return loss.detach() if isinstance(loss, Tensor) else torch.tensor(float(loss))

        loss = optim.step(torch_closure)  # type: ignore[arg-type]  # torch returns the closure's tensor
        for p in params:
            p.grad = None
        return model, float(loss)
