"""`GradientsParams` and `GradientsAccumulator`: gradients keyed by parameter, as in Burn."""

from __future__ import annotations

from collections.abc import Iterator

from torch import Tensor, nn

from burnlike.autodiff import Gradients


class GradientsParams:
    """Gradients mapped to the parameters of one module (Burn's `GradientsParams`).

    Args:
        grads: Gradient per parameter to start with (None: none).
    """

    def __init__(self, grads: dict[nn.Parameter, Tensor] | None = None) -> None:
        self._grads: dict[nn.Parameter, Tensor] = dict(grads or {})

    @classmethod
    def from_grads(cls, grads: Gradients, module: nn.Module) -> GradientsParams:
        """Run the backward pass of `grads` for every trainable parameter of `module`.

        Args:
            grads: The loss's gradients (`backward(loss)`).
            module: The module whose trainable parameters get their gradients.
        """
        params = [p for p in module.parameters() if p.requires_grad]
        values = grads.compute(list(params))
        return cls({p: g for p, g in zip(params, values) if g is not None})

    from_module = from_grads
    """Burn's other name for `from_grads`."""

    @classmethod
    def from_params(cls, grads: Gradients, module: nn.Module, params: list[nn.Parameter]) -> GradientsParams:
        """Like `from_grads`, for the chosen `params` of `module` only (others are ignored).

        Args:
            grads: The loss's gradients.
            module: The module the parameters belong to.
            params: The parameters to compute gradients for.
        """
        owned = {id(p) for p in module.parameters()}
        chosen = [p for p in params if id(p) in owned]
        values = grads.compute(list(chosen))
        return cls({p: g for p, g in zip(chosen, values) if g is not None})

    def get(self, param: nn.Parameter) -> Tensor | None:
        """The gradient of `param` (None: it has none).

        Args:
            param: The parameter.
        """
        return self._grads.get(param)

    def remove(self, param: nn.Parameter) -> Tensor | None:
        """Take the gradient of `param` out (None: it had none).

        Args:
            param: The parameter.
        """
        return self._grads.pop(param, None)

    def register(self, param: nn.Parameter, grad: Tensor) -> None:
        """Set the gradient of `param`, replacing any.

        Args:
            param: The parameter.
            grad: Its gradient, of its shape.
        """
        self._grads[param] = grad

    def items(self) -> Iterator[tuple[nn.Parameter, Tensor]]:
        """The `(parameter, gradient)` pairs."""
        return iter(self._grads.items())

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, param: object) -> bool:
        return param in self._grads


class GradientsAccumulator:
    """Sums gradients over several backward passes; `grads()` pops the sum (Burn's accumulator)."""

    def __init__(self) -> None:
        self._sum = GradientsParams()

    def accumulate(self, module: nn.Module, grads: GradientsParams) -> None:
        """Add `grads` to the sum.

        Args:
            module: The module the gradients belong to (Burn's signature; the parameters key the sum).
            grads: One backward pass's gradients.
        """
        for param, grad in grads.items():
            current = self._sum.get(param)
            self._sum.register(param, grad if current is None else current + grad)

    def grads(self) -> GradientsParams:
        """The sum so far; the accumulator starts again from zero."""
        out, self._sum = self._sum, GradientsParams()
        return out
