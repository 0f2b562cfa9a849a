"""Optimizer configs with Burn's names and defaults, building `torch.optim` optimizers.

`config.init()` gives an `Optimizer`: the Learner asks it for a `torch.optim.Optimizer`
(`build(params, lr)`); a custom loop calls `optim.step(lr, model, grads)` as in Burn, where the
learning rate is an argument of the step, not optimizer state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor, nn

from burnlike.config import BURNLIKE_ONLY, config
from burnlike.optim.adamw import BurnAdamW
from burnlike.optim.grads import GradientsParams


@config
class WeightDecayConfig:
    """Burn's `WeightDecayConfig`: an L2 penalty added to the gradient (not AdamW's decoupled decay)."""

    penalty: float  # the L2 factor: penalty * weight is added to each gradient


@config
class MomentumConfig:
    """Burn's momentum (burn-optim `optim/momentum.rs`): velocity = (1 - dampening)·grad +
    momentum·velocity (the first step: grad), and with `nesterov` the update is grad +
    momentum·velocity. Nesterov works with any dampening, Burn's default 0.1 included."""

    momentum: float = 0.9  # the velocity's decay factor
    dampening: float = 0.1  # the share of the gradient kept out of the velocity
    nesterov: bool = False  # Nesterov's update: grad + momentum * velocity


@config
class GradientClippingConfig:
    """Burn's `GradientClippingConfig::{Value(f32), Norm(f32)}`: applied per parameter tensor, not
    globally. `GradientClippingConfig.Norm(1.0)` as in Burn; the fields `kind`/`threshold` are what a
    Hydra override sets (`optimizer.grad_clipping={kind:norm,threshold:1.0}`). Its JSON is Burn's
    (serde's enum shape): `{"Norm": 1.0}`, `{"Value": 0.5}`.

    `GlobalNorm(x)` (kind `global_norm`, burnlike's; Burn has no such variant) scales every gradient
    by one factor so that their joint L2 norm is at most x: `torch.nn.utils.clip_grad_norm_` over all
    the parameters, as nanoGPT and Lightning's `gradient_clip_val` clip. It runs wherever the
    optimizer config's clipping runs (eager steps, Burn's accumulation, the CUDA-graph step)."""

    kind: str = "norm"  # "norm" | "value" | "global_norm"
    threshold: float = 1.0  # the bound: the gradient's norm (kind=norm), the joint norm (global_norm) or each value (kind=value)

    @classmethod
    def Value(cls, threshold: float) -> GradientClippingConfig:  # noqa: N802 - Burn's variant name
        """Clipping with each gradient value clamped to [-threshold, threshold].

        Args:
            threshold: The bound.
        """
        return cls(kind="value", threshold=threshold)

    @classmethod
    def Norm(cls, threshold: float) -> GradientClippingConfig:  # noqa: N802 - Burn's variant name
        """Clipping with each parameter's gradient scaled down to an L2 norm of at most `threshold`.

        Args:
            threshold: The bound.
        """
        return cls(kind="norm", threshold=threshold)

    @classmethod
    def GlobalNorm(cls, threshold: float) -> GradientClippingConfig:  # noqa: N802 - as Burn's variants
        """Clipping with all gradients scaled by one factor, to a joint L2 norm of at most `threshold`.

        Args:
            threshold: The bound.
        """
        return cls(kind="global_norm", threshold=threshold)

    def serde_value(self) -> dict[str, float]:
        """Burn's JSON: `{"Norm": threshold}` or `{"Value": threshold}` (burnlike's `{"GlobalNorm": x}`)."""
        variant = _CLIPPING_VARIANTS.get(self.kind)
        if variant is None:
            raise ValueError(f"GradientClippingConfig.kind must be {_KINDS}, got {self.kind!r}")
        return {variant: self.threshold}

    @classmethod
    def from_serde(cls, data: Any) -> GradientClippingConfig:
        """Burn's `{"Norm": 1.0}` / `{"Value": 1.0}` (burnlike's earlier `{"kind", "threshold"}` too)."""
        if isinstance(data, dict) and set(data) <= {"kind", "threshold"} and data:
            kind = data.get("kind", "norm")
            if kind not in _CLIPPING_VARIANTS:
                raise ValueError(f"kind must be {_KINDS}, got {kind!r}")
            return cls(kind, _threshold(data.get("threshold", 1.0)))
        if not isinstance(data, dict) or len(data) != 1:
            raise ValueError('expected {"Norm": <threshold>}, {"Value": <threshold>} or {"GlobalNorm": <threshold>}')
        (variant, threshold), = data.items()
        kinds = {name: kind for kind, name in _CLIPPING_VARIANTS.items()}
        if variant not in kinds:
            raise ValueError(f"unknown variant {variant!r} (Burn's are Value and Norm; burnlike adds GlobalNorm)")
        return cls(kinds[variant], _threshold(threshold))

    def clip(self, params: Iterable[Tensor]) -> None:
        """Clip the gradients of `params` in place (parameters without one are skipped).

        Args:
            params: The parameters whose `.grad` to clip.

        Raises:
            ValueError: `kind` is none of "norm", "value", "global_norm".
        """
        if self.kind not in _CLIPPING_VARIANTS:
            raise ValueError(f"GradientClippingConfig.kind must be {_KINDS}, got {self.kind!r}")
        if self.kind == "global_norm":  # one factor for all: no host sync, so a CUDA graph can hold it
            torch.nn.utils.clip_grad_norm_([p for p in params if p.grad is not None], self.threshold)
            return
        for p in params:
            if p.grad is None:
                continue
            if self.kind == "value":
                p.grad.clamp_(-self.threshold, self.threshold)
            else:
                torch.nn.utils.clip_grad_norm_([p], self.threshold)  # foreach where the device has it (not MPS)


_CLIPPING_VARIANTS = {"value": "Value", "norm": "Norm", "global_norm": "GlobalNorm"}
_KINDS = "'norm', 'value' or 'global_norm'"


def _threshold(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"the threshold must be a number, got {value!r}")
    return float(value)


class OptimizerConfig:
    """What every optimizer config provides: `init()` and the torch optimizer it stands for."""

    grad_clipping: GradientClippingConfig | None
    """Clipping applied to the gradients before each step (None: none)."""

    def init(self) -> Optimizer:
        """The optimizer, for a custom loop's `step(lr, model, grads)` or the Learner."""
        return Optimizer(self)

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        """The torch optimizer this config stands for, with Burn's update.

        Args:
            params: The parameters (or torch param groups) to optimize.
            lr: The learning rate to start from (a scheduler sets it each step).
        """
        raise NotImplementedError


@config
class AdamConfig(OptimizerConfig):
    """Burn's `AdamConfig`, as `torch.optim.Adam` with Burn's defaults (epsilon 1e-5)."""

    beta_1: float = 0.9  # decay rate of the gradient's running mean (first moment)
    beta_2: float = 0.999  # decay rate of the squared gradient's running mean (second moment)
    epsilon: float = 1e-5  # added to the denominator for stability (Burn's 1e-5; torch's Adam uses 1e-8)
    amsgrad: bool = False  # AMSGrad: divide by the largest second moment seen so far
    # null, or {penalty: x}: an L2 penalty added to the gradient
    weight_decay: WeightDecayConfig | None = None
    # null, or {kind: norm|value, threshold: x}: clip each parameter's gradient
    grad_clipping: GradientClippingConfig | None = None

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        wd = self.weight_decay.penalty if self.weight_decay else 0.0  # L2 penalty, as Burn's Adam
        return torch.optim.Adam(
            params, lr=lr, betas=(self.beta_1, self.beta_2), eps=self.epsilon, weight_decay=wd, amsgrad=self.amsgrad
        )


@config
class AdamWConfig(OptimizerConfig):
    """Burn's `AdamWConfig`. `weight_decay_min_ndim` (burnlike's; not in Burn's JSON while null):
    parameters with fewer dimensions get no weight decay. 2 is nanoGPT's and GPT-2's rule (matmul
    weights and embeddings decay; biases and norm gains don't); null is Burn's (every parameter)."""

    beta_1: float = 0.9  # decay rate of the gradient's running mean (first moment)
    beta_2: float = 0.999  # decay rate of the squared gradient's running mean (second moment)
    epsilon: float = 1e-5  # added to the denominator for stability
    weight_decay: float = 1e-4  # decoupled decay: each step shrinks the weights by lr * weight_decay
    amsgrad: bool = False  # AMSGrad: divide by the largest second moment seen so far
    cautious_weight_decay: bool = False  # Burn 0.19: decay only where the weight and the update agree in sign
    # null, or {kind: norm|value, threshold: x}: clip each parameter's gradient
    grad_clipping: GradientClippingConfig | None = None
    # null: every parameter decays (Burn's); 2: only tensors of 2+ dims (nanoGPT: no decay on biases and norms)
    weight_decay_min_ndim: int | None = dataclasses.field(default=None, metadata={BURNLIKE_ONLY: True})

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        groups = decay_groups(params, self.weight_decay, self.weight_decay_min_ndim)
        if self.cautious_weight_decay:  # Burn 0.19: decay only where it agrees with the update's sign
            return BurnAdamW(groups, lr, (self.beta_1, self.beta_2), self.epsilon, self.weight_decay, self.amsgrad,
                             cautious_weight_decay=True)
        return torch.optim.AdamW(
            groups,
            lr=lr,
            betas=(self.beta_1, self.beta_2),
            eps=self.epsilon,
            weight_decay=self.weight_decay,
            amsgrad=self.amsgrad,
        )


def decay_groups(params: Iterable[Any], weight_decay: float, min_ndim: int | None) -> list[Any]:
    """`params` as torch param groups: unchanged when `min_ndim` is None (one decay for all); else
    the tensors of at least `min_ndim` dimensions, then the others with a weight decay of 0 (empty
    groups left out)."""
    params = list(params)
    if min_ndim is None:
        return params
    if isinstance(min_ndim, bool) or not isinstance(min_ndim, int) or min_ndim < 0:
        raise ValueError(f"weight_decay_min_ndim must be null or an integer >= 0, got {min_ndim!r}")
    if any(isinstance(p, dict) for p in params):
        raise TypeError("weight_decay_min_ndim splits a list of parameters into groups; it got param groups already")
    decayed = [p for p in params if p.dim() >= min_ndim]
    kept = [p for p in params if p.dim() < min_ndim]
    groups: list[dict[str, Any]] = [{"params": decayed, "weight_decay": weight_decay},
                                    {"params": kept, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


@config
class SgdConfig(OptimizerConfig):
    """Burn's `SgdConfig`: plain SGD, with Burn's momentum and weight decay when set."""

    # null, or {penalty: x}: an L2 penalty added to the gradient
    weight_decay: WeightDecayConfig | None = None
    # null (plain SGD), or {momentum, dampening, nesterov}: Burn's momentum
    momentum: MomentumConfig | None = None
    # null, or {kind: norm|value, threshold: x} (Burn's SGD spells it so)
    gradient_clipping: GradientClippingConfig | None = None

    @property
    def grad_clipping(self) -> GradientClippingConfig | None:  # type: ignore[override]
        """`gradient_clipping`, under the name every optimizer config has."""
        return self.gradient_clipping

    def torch_optimizer(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        m = self.momentum
        return BurnSgd(
            params,
            lr=lr,
            momentum=m.momentum if m else 0.0,
            dampening=m.dampening if m else 0.0,
            nesterov=m.nesterov if m else False,
            weight_decay=self.weight_decay.penalty if self.weight_decay else 0.0,
        )


class BurnSgd(torch.optim.SGD):
    """`torch.optim.SGD`, whose update is Burn's (weight decay, then momentum with dampening, then
    Nesterov's look-ahead: burn-optim `optim/sgd.rs`, `optim/momentum.rs`), without torch's refusal of
    Nesterov with a dampening other than 0 or no momentum: Burn trains with both (its default
    dampening is 0.1). torch checks that in its constructor only; its step computes Burn's update.

    Args:
        params: The parameters (or param groups) to optimize.
        lr: The learning rate.
        momentum: The velocity's decay factor (0: no momentum).
        dampening: The share of the gradient kept out of the velocity.
        nesterov: Nesterov's update: grad + momentum * velocity.
        weight_decay: An L2 penalty factor added to the gradient.
    """

    def __init__(self, params: Iterable[Any], lr: float, momentum: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False, weight_decay: float = 0.0) -> None:
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, nesterov=False,
                         weight_decay=weight_decay)
        self.defaults["nesterov"] = nesterov
        for group in self.param_groups:
            group["nesterov"] = nesterov


TorchOptimizerFactory = Callable[..., torch.optim.Optimizer]


class Optimizer:
    """An initialised optimizer (Burn's `OptimizerAdaptor`): `step(lr, model, grads) -> model`.

    Also wraps a plain torch factory (`functools.partial(torch.optim.SGD, momentum=0.9)`), so
    Lightning users can bring their own optimizer to the Learner.

    Args:
        spec: An optimizer config, or a callable `(params, lr=...)` returning a torch optimizer.

    Attributes:
        spec: What the torch optimizer is built from.
    """

    def __init__(self, spec: OptimizerConfig | TorchOptimizerFactory) -> None:
        self.spec = spec
        self._torch: torch.optim.Optimizer | None = None
        self._params: list[nn.Parameter] = []

    @property
    def grad_clipping(self) -> GradientClippingConfig | None:
        """The config's gradient clipping (None: none, or a plain torch factory)."""
        return getattr(self.spec, "grad_clipping", None)

    def build(self, params: Iterable[Any], lr: float) -> torch.optim.Optimizer:
        """A new torch optimizer over `params` (what the Learner hands to Lightning).

        Args:
            params: The parameters (or param groups) to optimize.
            lr: The learning rate to start from.
        """
        if isinstance(self.spec, OptimizerConfig):
            return self.spec.torch_optimizer(params, lr)
        return self.spec(params, lr=lr)

    def _bind(self, params: list[nn.Parameter], lr: float) -> torch.optim.Optimizer:
        """The torch optimizer over `params` (rebuilt if the model changed), at learning rate `lr`."""
        if self._torch is None or [id(p) for p in params] != [id(p) for p in self._params]:
            self._torch, self._params = self.build(params, lr), params
        for group in self._torch.param_groups:
            group["lr"] = lr
        return self._torch

    def step(self, lr: float, model: nn.Module, grads: GradientsParams) -> nn.Module:
        """Burn's `optim.step(lr, model, grads)`: one update of `model` from `grads` (clipped first
        when the config says), in place.

        Args:
            lr: This step's learning rate.
            model: The module to update; the torch optimizer is rebuilt when its parameters change.
            grads: The gradients per parameter (`GradientsParams`); parameters without one are not updated.

        Returns:
            `model`.
        """
        params = [p for p in model.parameters() if p.requires_grad]
        optim = self._bind(params, lr)
        for p in params:
            p.grad = grads.get(p)
        if self.grad_clipping is not None:
            self.grad_clipping.clip(params)
        optim.step()
        for p in params:
            p.grad = None
        return model

    def state_dict(self) -> dict[str, Any]:
        """The torch optimizer's state (empty before the first step)."""
        return self._torch.state_dict() if self._torch is not None else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned.

        Args:
            state: A torch optimizer state dict.

        Raises:
            RuntimeError: No step (or `build`) has bound the parameters yet.
        """
        if self._torch is None:
            raise RuntimeError("Optimizer.load_state_dict: run one step (or build) first so parameters are bound")
        self._torch.load_state_dict(state)


def as_optimizer(optim: Optimizer | OptimizerConfig | TorchOptimizerFactory) -> Optimizer:
    if isinstance(optim, Optimizer):
        return optim
    if isinstance(optim, OptimizerConfig):
        return optim.init()
    if callable(optim):
        return Optimizer(optim)
    raise TypeError(
        "optimizer must be a burnlike optimizer (AdamConfig().init()), an optimizer config, or a "
        f"callable(params, lr=...) returning a torch.optim.Optimizer; got {type(optim).__name__}"
    )
