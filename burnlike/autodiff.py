"""Burn's lazy `Gradients`: `backward(loss)` hands the loss to whoever applies it.

Under the Learner, Lightning runs the actual backward pass (so AMP, accumulation, clipping and DDP
keep working); in a custom loop `GradientsParams.from_grads(grads, model)` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(eq=False)
class Gradients:
    """The gradients of `loss`, computed on demand (Burn's `B::Gradients`)."""

    loss: Tensor
    consumed: bool = False

    def compute(self, params: list[Tensor], retain_graph: bool = False) -> list[Tensor | None]:
        if self.consumed:
            raise RuntimeError("these Gradients were already consumed; call backward(loss) again")
        if not self.loss.requires_grad:
            raise RuntimeError("backward(loss): the loss does not require grad (was it computed under no_grad?)")
        self.consumed = not retain_graph
        grads = torch.autograd.grad(self.loss, params, retain_graph=retain_graph, allow_unused=True)
        return list(grads)

    def grad(self, tensor: Tensor) -> Tensor | None:
        """Gradient of one tensor (Burn's `tensor.grad(&grads)`); keeps the graph for later calls."""
        return self.compute([tensor], retain_graph=True)[0]


def backward(loss: Tensor) -> Gradients:
    """Burn's `loss.backward()`: returns the gradients instead of storing them on the parameters."""
    if not isinstance(loss, Tensor):
        raise TypeError(f"backward() expects the loss tensor, got {type(loss).__name__}")
    return Gradients(loss)
