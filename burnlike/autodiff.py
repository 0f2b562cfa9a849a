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

    loss: Tensor  # the scalar whose gradients these are; the graph behind it is kept until computed
    consumed: bool = False  # set once a backward pass freed the graph: a second one would fail in torch

    def compute(self, params: list[Tensor], retain_graph: bool = False) -> list[Tensor | None]:
        """Run the backward pass for `params` (what `GradientsParams.from_grads` calls).

        Args:
            params: The tensors to differentiate `loss` with respect to.
            retain_graph: Keep the graph for another call; without it these gradients are consumed.

        Returns:
            One gradient per tensor of `params`, None for a tensor `loss` does not depend on.

        Raises:
            RuntimeError: They were already consumed, or `loss` does not require grad.
        """
        if self.consumed:
            raise RuntimeError("these Gradients were already consumed; call backward(loss) again")
        if not self.loss.requires_grad:
            raise RuntimeError("backward(loss): the loss does not require grad (was it computed under no_grad?)")
        self.consumed = not retain_graph
        grads = torch.autograd.grad(self.loss, params, retain_graph=retain_graph, allow_unused=True)
        return list(grads)

    def grad(self, tensor: Tensor) -> Tensor | None:
        """Gradient of one tensor (Burn's `tensor.grad(&grads)`); keeps the graph for later calls.

        Args:
            tensor: A tensor `loss` was computed from, usually a parameter.

        Returns:
            Its gradient, or None when `loss` does not depend on it.
        """
        return self.compute([tensor], retain_graph=True)[0]


def backward(loss: Tensor) -> Gradients:
    """Burn's `loss.backward()`: returns the gradients instead of storing them on the parameters.

    Args:
        loss: The scalar loss tensor (computed with grad enabled).

    Returns:
        The lazy gradients: `TrainOutput(model, grads, item)` hands them to the Learner, which runs
        the backward pass inside Lightning; `GradientsParams.from_grads(grads, model)` runs it in a
        custom loop.

    Raises:
        TypeError: `loss` is not a tensor.
    """
    if not isinstance(loss, Tensor):
        raise TypeError(f"backward() expects the loss tensor, got {type(loss).__name__}")
    return Gradients(loss)
