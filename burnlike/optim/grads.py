"""`GradientsParams` and `GradientsAccumulator`: gradients keyed by parameter, as in Burn."""

from __future__ import annotations

from collections.abc import Iterator

from torch import Tensor, nn

from burnlike.autodiff import Gradients


class GradientsParams:
    """Gradients mapped to the parameters of one module (Burn's `GradientsParams`)."""

    def __init__(self, grads: dict[nn.Parameter, Tensor] | None = None) -> None:
        self._grads: dict[nn.Parameter, Tensor] = dict(grads or {})

    @classmethod
    def from_grads(cls, grads: Gradients, module: nn.Module) -> GradientsParams:
        """Run the backward pass of `grads` for every trainable parameter of `module`."""
        params = [p for p in module.parameters() if p.requires_grad]
        values = grads.compute(list(params))
        return cls({p: g for p, g in zip(params, values) if g is not None})

    from_module = from_grads

    @classmethod
    def from_params(cls, grads: Gradients, module: nn.Module, params: list[nn.Parameter]) -> GradientsParams:
        owned = {id(p) for p in module.parameters()}
        chosen = [p for p in params if id(p) in owned]
        values = grads.compute(list(chosen))
        return cls({p: g for p, g in zip(chosen, values) if g is not None})

    def get(self, param: nn.Parameter) -> Tensor | None:
        return self._grads.get(param)

    def remove(self, param: nn.Parameter) -> Tensor | None:
        return self._grads.pop(param, None)

    def register(self, param: nn.Parameter, grad: Tensor) -> None:
        self._grads[param] = grad

    def items(self) -> Iterator[tuple[nn.Parameter, Tensor]]:
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
        for param, grad in grads.items():
            current = self._sum.get(param)
            self._sum.register(param, grad if current is None else current + grad)

    def grads(self) -> GradientsParams:
        out, self._sum = self._sum, GradientsParams()
        return out
