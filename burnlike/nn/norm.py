"""Burn's normalizations (burn-nn `modules/norm/`): `BatchNormConfig(num_features)`,
`LayerNormConfig(d_model)`, `GroupNormConfig(num_groups, num_channels)`, `InstanceNormConfig(num_channels)`,
`RmsNormConfig(d_model)`.

Their learnable scale and shift are torch's `weight`/`bias` (`gamma`/`beta` read them, as Burn names
them); records store them as Burn's `gamma`/`beta`, with BatchNorm's running stats, and nil for the
config fields.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from burnlike.config import config
from burnlike.module import Module
from burnlike.record.format.walker import Field
from burnlike.record.tensor.version import is_0_19


class _Affine:
    """`gamma`/`beta`: Burn's names for the scale and shift."""

    weight: Any
    """The learnable scale (Burn's `gamma`), or None without one."""
    bias: Any
    """The learnable shift (Burn's `beta`), or None without one."""

    @property
    def gamma(self) -> nn.Parameter | None:
        """Burn's name for the scale, torch's `weight`."""
        weight: nn.Parameter | None = self.weight
        return weight

    @property
    def beta(self) -> nn.Parameter | None:
        """Burn's name for the shift, torch's `bias`."""
        bias: nn.Parameter | None = self.bias
        return bias

    def _affine_fields(self, optional: bool) -> list[Field]:
        return [Field(name, "param" if getattr(self, attr) is not None else "none", self, attr,  # type: ignore[arg-type]
                      optional=optional) for name, attr in (("gamma", "weight"), ("beta", "bias"))]


class BatchNorm(_Affine, Module):
    """Burn's `BatchNorm` over `[batch, channels, ...]` (any rank >= 2; torch has one class per rank).

    Burn's numbers, not torch's: in training the running variance moves towards the *biased* batch
    variance (torch's `BatchNorm*d` uses the unbiased one): `running_var = (1 - momentum)·running_var +
    momentum·var(x, correction=0)`; the output is normalized by the batch's biased variance (as torch).
    Evaluation (`.eval()`/`valid()`) uses the running stats. Defaults: epsilon 1e-5, momentum 0.1.

    Args:
        num_features: The channels (dim 1).
        epsilon: Added to the variance for stability.
        momentum: How far the running stats move towards each batch's.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).

    Attributes:
        num_features: The channels.
        epsilon: Added to the variance.
        momentum: The running stats' momentum.
        weight: The scale (Burn's `gamma`), `[num_features]`.
        bias: The shift (Burn's `beta`), `[num_features]`.
        running_mean: The running mean, `[num_features]` (a buffer; a param in Burn's record).
        running_var: The running biased variance, `[num_features]`.
    """

    def __init__(self, num_features: int, epsilon: float = 1e-5, momentum: float = 0.1, *, device: Any = None,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.num_features, self.epsilon, self.momentum = num_features, epsilon, momentum
        self.weight = nn.Parameter(torch.ones(num_features, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(num_features, device=device, dtype=dtype))
        self.register_buffer("running_mean", torch.zeros(num_features, device=device, dtype=dtype))
        self.register_buffer("running_var", torch.ones(num_features, device=device, dtype=dtype))

    running_mean: Tensor
    running_var: Tensor

    def forward(self, input: Tensor) -> Tensor:
        """Normalize.

        Args:
            input: `[batch, channels, ...]`.

        Returns:
            The same shape.
        """
        if input.dim() < 2:
            raise ValueError("BatchNorm can only be applied on tensors of rank >= 2 with the following shape "
                             f"[batch_size, channels, ...], received {input.dim()}D tensor")
        if not self.training:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0,
                                self.epsilon)
        with torch.no_grad():
            dims = [0, *range(2, input.dim())]
            var, mean = torch.var_mean(input.detach(), dim=dims, correction=0)
            self.running_mean.mul_(1.0 - self.momentum).add_(mean.to(self.running_mean.dtype), alpha=self.momentum)
            self.running_var.mul_(1.0 - self.momentum).add_(var.to(self.running_var.dtype), alpha=self.momentum)
        return F.batch_norm(input, None, None, self.weight, self.bias, True, 0.0, self.epsilon)

    def extra_repr(self) -> str:
        return f"num_features: {self.num_features}, momentum: {self.momentum}, epsilon: {self.epsilon}"

    def burn_record_fields(self, version: str) -> list[Field]:
        return self._affine_fields(False) + [
            Field("running_mean", "param", self, "running_mean"), Field("running_var", "param", self, "running_var"),
            Field("momentum", "nil"), Field("epsilon", "nil")]


class LayerNorm(_Affine, Module, nn.LayerNorm):
    """Burn's `LayerNorm` over the last dim (torch's formula; Burn's epsilon 1e-5, as torch's).
    `bias=False` has no beta (Burn 0.21; 0.19's LayerNorm always has one).

    Args:
        d_model: The size of the last dim.
        epsilon: Added to the variance for stability.
        bias: Whether there is a shift (beta).
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).
    """

    def __init__(self, d_model: int, epsilon: float = 1e-5, bias: bool = True, *, device: Any = None,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__(d_model, eps=epsilon, elementwise_affine=True, bias=bias, device=device, dtype=dtype)

    @property
    def epsilon(self) -> float:
        """Burn's name for torch's `eps`."""
        return self.eps

    def burn_record_fields(self, version: str) -> list[Field]:
        return self._affine_fields(not is_0_19(version)) + [Field("epsilon", "nil")]


class GroupNorm(_Affine, Module, nn.GroupNorm):
    """Burn's `GroupNorm` over `[batch, channels, ...]`, torch's formula (biased variance per group);
    `affine` (default true) gives gamma and beta.

    Args:
        num_groups: The groups the channels are split into.
        num_channels: The channels (dim 1); divisible by `num_groups`.
        epsilon: Added to the variance for stability.
        affine: Whether there are a scale and a shift per channel.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).

    Raises:
        ValueError: `num_channels` is not divisible by `num_groups`.
    """

    def __init__(self, num_groups: int, num_channels: int, epsilon: float = 1e-5, affine: bool = True, *,
                 device: Any = None, dtype: torch.dtype | None = None) -> None:
        if num_channels % num_groups:
            raise ValueError("The number of channels must be divisible by the number of groups")
        super().__init__(num_groups, num_channels, eps=epsilon, affine=affine, device=device, dtype=dtype)

    @property
    def epsilon(self) -> float:
        """Burn's name for torch's `eps`."""
        return self.eps

    def forward(self, input: Tensor) -> Tensor:
        """Normalize.

        Args:
            input: `[batch, num_channels, ...]`.

        Returns:
            The same shape.
        """
        if input.shape[1] != self.num_channels:
            raise ValueError("The number of channels in the input tensor should be equal to the number of channels in "
                             f"the GroupNorm module. Expected {self.num_channels}, got {input.shape[1]}")
        out: Tensor = super().forward(input)
        return out

    def burn_record_fields(self, version: str) -> list[Field]:
        return self._affine_fields(True) + [Field(n, "nil") for n in ("num_groups", "num_channels", "epsilon", "affine")]


class InstanceNorm(_Affine, Module):
    """Burn's `InstanceNorm`: a group norm with one group per channel, over `[batch, channels, ...]` of
    any rank; no running stats. Burn's default `affine` is true (torch's `InstanceNorm*d`: false).

    Args:
        num_channels: The channels (dim 1).
        epsilon: Added to the variance for stability.
        affine: Whether there are a scale and a shift per channel.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).

    Attributes:
        num_channels: The channels.
        epsilon: Added to the variance.
        affine: Whether there are a scale and a shift.
    """

    def __init__(self, num_channels: int, epsilon: float = 1e-5, affine: bool = True, *, device: Any = None,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.num_channels, self.epsilon, self.affine = num_channels, epsilon, affine
        self.weight = nn.Parameter(torch.ones(num_channels, device=device, dtype=dtype)) if affine else None
        self.bias = nn.Parameter(torch.zeros(num_channels, device=device, dtype=dtype)) if affine else None

    def forward(self, input: Tensor) -> Tensor:
        """Normalize.

        Args:
            input: `[batch, num_channels, ...]`.

        Returns:
            The same shape.
        """
        return F.group_norm(input, self.num_channels, self.weight, self.bias, self.epsilon)

    def extra_repr(self) -> str:
        return f"num_channels: {self.num_channels}, epsilon: {self.epsilon}, affine: {self.affine}"

    def burn_record_fields(self, version: str) -> list[Field]:
        return self._affine_fields(True) + [Field(n, "nil") for n in ("num_channels", "epsilon", "affine")]


class RmsNorm(_Affine, Module, nn.RMSNorm):
    """Burn's `RmsNorm`: `x / √(mean(x², last dim) + ε) · gamma`, ε 1e-5 (torch's `RMSNorm` default is
    the dtype's machine epsilon).

    Args:
        d_model: The size of the last dim.
        epsilon: Added to the mean square for stability.
        device: Where the parameters are created.
        dtype: The parameters' dtype (torch's default when None).
    """

    def __init__(self, d_model: int, epsilon: float = 1e-5, *, device: Any = None,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__(d_model, eps=epsilon, elementwise_affine=True, device=device, dtype=dtype)

    @property
    def epsilon(self) -> float:
        """Burn's name for torch's `eps`."""
        return float(self.eps)  # type: ignore[arg-type]

    def burn_record_fields(self, version: str) -> list[Field]:
        return [Field("gamma", "param", self, "weight"), Field("epsilon", "nil")]


@config
class BatchNormConfig:
    """Burn's `BatchNormConfig`: epsilon 1e-5, momentum 0.1 (torch's too; the variance update differs)."""

    num_features: int  # the channels (dim 1)
    epsilon: float = 1e-5  # added to the variance for stability
    momentum: float = 0.1  # how far the running stats move towards each batch's

    def init(self, device: Any = None) -> BatchNorm:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return BatchNorm(self.num_features, self.epsilon, self.momentum, device=device)


@config
class LayerNormConfig:
    """Burn's `LayerNormConfig`: epsilon 1e-5, bias true."""

    d_model: int  # the size of the last dim
    epsilon: float = 1e-5  # added to the variance for stability
    bias: bool = True  # whether there is a shift (beta)

    def init(self, device: Any = None) -> LayerNorm:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return LayerNorm(self.d_model, self.epsilon, self.bias, device=device)


@config
class GroupNormConfig:
    """Burn's `GroupNormConfig`: epsilon 1e-5, affine true."""

    num_groups: int  # the groups the channels are split into
    num_channels: int  # the channels (dim 1), divisible by num_groups
    epsilon: float = 1e-5  # added to the variance for stability
    affine: bool = True  # whether there are a scale and a shift per channel

    def init(self, device: Any = None) -> GroupNorm:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return GroupNorm(self.num_groups, self.num_channels, self.epsilon, self.affine, device=device)


@config
class InstanceNormConfig:
    """Burn's `InstanceNormConfig`: epsilon 1e-5, affine true."""

    num_channels: int  # the channels (dim 1)
    epsilon: float = 1e-5  # added to the variance for stability
    affine: bool = True  # whether there are a scale and a shift per channel

    def init(self, device: Any = None) -> InstanceNorm:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return InstanceNorm(self.num_channels, self.epsilon, self.affine, device=device)


@config
class RmsNormConfig:
    """Burn's `RmsNormConfig`: epsilon 1e-5."""

    d_model: int  # the size of the last dim
    epsilon: float = 1e-5  # added to the mean square for stability, > 0

    def init(self, device: Any = None) -> RmsNorm:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        if self.epsilon <= 0:
            raise ValueError(f"RmsNormConfig: epsilon must be positive, got {self.epsilon}")
        return RmsNorm(self.d_model, self.epsilon, device=device)
