"""Burn's activations (burn-nn `activation/`): `Relu()`, `Gelu()`/`Gelu.new_approximate()`, `Sigmoid()`,
`Tanh()`, `Selu()`, `HardSwish()`, `Softsign()`, and the configured ones (`LeakyReluConfig().init()`,
`PReluConfig().init(device)`, `SwiGluConfig(d_in, d_out).init(device)`, `HardSigmoidConfig()`, ...),
each a `torch.nn` module; `ActivationConfig`/`Activation`: Burn's enum of them, what Burn's LSTM, GRU
and feed-forward layers take.

Where Burn's numbers differ from torch's, these follow Burn:
- `HardSigmoid`: clamp(alpha·x + beta, 0, 1), alpha 0.2, beta 0.5 (ONNX's; torch's `Hardsigmoid` is
  alpha 1/6);
- `Softplus`: log(exp(beta·x) + 1) / beta, with no linear regime (torch switches to x above 20);
- `ThresholdedRelu` (alpha 1.0), `Shrink` (lambda 0.5, bias 0.5): ONNX's, which torch lacks;
- `PRelu`'s `alpha` is torch's `weight`, initialised to 0.25 (torch's too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from burnlike.config import config
from burnlike.module import Module
from burnlike.nn.initializer import KAIMING_DEFAULT, Initializer
from burnlike.nn.linear import Linear, LinearLayout
from burnlike.record.format.walker import Field
from burnlike.record.tensor.version import is_0_19


class Relu(Module, nn.ReLU):
    """Burn's `Relu`."""

    @classmethod
    def new(cls) -> Relu:
        """Burn's `Relu::new()`, the same as `Relu()`."""
        return cls()


class Gelu(Module, nn.GELU):
    """Burn's `Gelu`: the exact (erf) GELU; `Gelu.new_approximate()`: the tanh approximation.

    Args:
        approximate: The tanh approximation instead of erf.
    """

    def __init__(self, approximate: bool = False) -> None:
        super().__init__("tanh" if approximate else "none")

    @classmethod
    def new(cls) -> Gelu:
        """Burn's `Gelu::new()`, the same as `Gelu()`."""
        return cls()

    @classmethod
    def new_approximate(cls) -> Gelu:
        """Burn's `Gelu::new_approximate()`: the tanh approximation."""
        return cls(approximate=True)


class Sigmoid(Module, nn.Sigmoid):
    """Burn's `Sigmoid`."""

    @classmethod
    def new(cls) -> Sigmoid:
        """Burn's `Sigmoid::new()`, the same as `Sigmoid()`."""
        return cls()


class Tanh(Module, nn.Tanh):
    """Burn's `Tanh`."""

    @classmethod
    def new(cls) -> Tanh:
        """Burn's `Tanh::new()`, the same as `Tanh()`."""
        return cls()


class Selu(Module, nn.SELU):
    """Burn's `Selu` (torch's constants)."""

    @classmethod
    def new(cls) -> Selu:
        """Burn's `Selu::new()`, the same as `Selu()`."""
        return cls()


class HardSwish(Module, nn.Hardswish):
    """Burn's `HardSwish`: x · hard_sigmoid(x, 1/6, 0.5), torch's formula."""

    @classmethod
    def new(cls) -> HardSwish:
        """Burn's `HardSwish::new()`, the same as `HardSwish()`."""
        return cls()


class Softsign(Module, nn.Softsign):
    """Burn's `Softsign`: x / (1 + |x|)."""

    @classmethod
    def new(cls) -> Softsign:
        """Burn's `Softsign::new()`, the same as `Softsign()`."""
        return cls()


class GLU(Module, nn.GLU):
    """Burn's `GLU::new(dim)`: first half · sigmoid(second half) along `dim` (torch's `GLU(dim)`)."""

    @classmethod
    def new(cls, dim: int) -> GLU:
        """Burn's `GLU::new(dim)`.

        Args:
            dim: The dimension split in halves; its size must be even.
        """
        return cls(dim)


class LeakyRelu(Module, nn.LeakyReLU):
    """Burn's `LeakyRelu` (negative_slope 0.01, as torch's).

    Args:
        negative_slope: The slope for negative inputs.
    """

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__(negative_slope)


class Elu(Module, nn.ELU):
    """Burn's `Elu` (alpha 1.0).

    Args:
        alpha: The value the output tends to for large negative inputs is -alpha.
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__(alpha)


class Celu(Module, nn.CELU):
    """Burn's `Celu` (alpha 1.0).

    Args:
        alpha: The scale of the negative part, max(0, x) + min(0, alpha·(exp(x/alpha) - 1)).
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__(alpha)


class HardShrink(Module, nn.Hardshrink):
    """Burn's `HardShrink`: 0 where |x| <= lambda (0.5).

    Args:
        lambda_: The threshold (Burn's `lambda`).
    """

    def __init__(self, lambda_: float = 0.5) -> None:
        super().__init__(lambda_)


class SoftShrink(Module, nn.Softshrink):
    """Burn's `SoftShrink`: Shrink with bias = lambda (0.5).

    Args:
        lambda_: The threshold and the shift (Burn's `lambda`).
    """

    def __init__(self, lambda_: float = 0.5) -> None:
        super().__init__(lambda_)


class ThresholdedRelu(Module, nn.Threshold):
    """Burn's `ThresholdedRelu`: x where x > alpha (1.0), else 0.

    Args:
        alpha: The threshold.
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__(alpha, 0.0)


class Softplus(Module):
    """Burn's `Softplus`: log(exp(beta·x) + 1) / beta (beta 1.0), without torch's linear regime.

    Args:
        beta: The sharpness: the larger, the closer to ReLU.
    """

    def __init__(self, beta: float = 1.0) -> None:
        super().__init__()
        self.beta = beta
        """The sharpness."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply it element-wise.

        Args:
            input: Any shape.

        Returns:
            The same shape.
        """
        return torch.log(torch.exp(input * self.beta) + 1) / self.beta


class HardSigmoid(Module):
    """Burn's `HardSigmoid`: clamp(alpha·x + beta, 0, 1), alpha 0.2, beta 0.5 (torch: alpha 1/6).

    Args:
        alpha: The slope.
        beta: The offset.

    Attributes:
        alpha: The slope.
        beta: The offset.
    """

    def __init__(self, alpha: float = 0.2, beta: float = 0.5) -> None:
        super().__init__()
        self.alpha, self.beta = alpha, beta

    def forward(self, input: Tensor) -> Tensor:
        """Apply it element-wise.

        Args:
            input: Any shape.

        Returns:
            The same shape.
        """
        return torch.clamp(input * self.alpha + self.beta, 0.0, 1.0)


class Shrink(Module):
    """Burn's (ONNX's) `Shrink`: x - sign(x)·bias where |x| > lambda, else 0 (lambda 0.5, bias 0.5).

    Args:
        lambda_: The threshold (Burn's `lambda`).
        bias: The shift towards 0 of what passes.

    Attributes:
        lambda_: The threshold.
        bias: The shift.
    """

    def __init__(self, lambda_: float = 0.5, bias: float = 0.5) -> None:
        super().__init__()
        self.lambda_, self.bias = lambda_, bias

    def forward(self, input: Tensor) -> Tensor:
        """Apply it element-wise.

        Args:
            input: Any shape.

        Returns:
            The same shape.
        """
        shrunk = input - torch.sign(input) * self.bias
        return shrunk.masked_fill(input.abs() <= self.lambda_, 0.0)


class PRelu(Module, nn.PReLU):
    """Burn's `PRelu`: max(0, x) + alpha·min(0, x), `alpha` (torch's `weight`) one value or one per
    channel (dim 1); record `{alpha, alpha_value: nil}`.

    Args:
        num_parameters: 1, or the number of channels for one slope per channel.
        alpha: The slopes' initial value.
        device: Where the parameter is created.
        dtype: The parameter's dtype (torch's default when None).
    """

    def __init__(self, num_parameters: int = 1, alpha: float = 0.25, *, device: Any = None,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__(num_parameters, alpha, device=device, dtype=dtype)
        self.alpha_value = alpha
        """The initial slope (Burn's config field, nil in the record)."""

    @property
    def alpha(self) -> nn.Parameter:
        """The learned slopes, Burn's name for torch's `weight`."""
        return self.weight

    def burn_record_fields(self, version: str) -> list[Field]:
        return [Field("alpha", "param", self, "weight"), Field("alpha_value", "nil")]


class SwiGlu(Module):
    """Burn's `SwiGlu`: silu(linear_inner(x)) · linear_outer(x); both `d_input → d_output`, no bias by default.

    Args:
        d_input: Input features.
        d_output: Output features.
        bias: Biases in both linear layers.
        initializer: How both linear layers' parameters are drawn.
        layout: How their weights are stored in the record.
        device: Where the parameters are created.

    Attributes:
        linear_inner: The gate's linear layer, through SiLU.
        linear_outer: The value's linear layer.
    """

    def __init__(self, d_input: int, d_output: int, bias: bool = False, initializer: Initializer = KAIMING_DEFAULT,
                 layout: LinearLayout = LinearLayout.Row, *, device: Any = None) -> None:
        super().__init__()
        self.linear_inner = Linear(d_input, d_output, bias, initializer, layout, device=device)
        self.linear_outer = Linear(d_input, d_output, bias, initializer, layout, device=device)

    def forward(self, input: Tensor) -> Tensor:
        """Apply it over the last dimension.

        Args:
            input: `[..., d_input]`.

        Returns:
            `[..., d_output]`.
        """
        out: Tensor = F.silu(self.linear_inner(input)) * self.linear_outer(input)
        return out


# --- configs ---------------------------------------------------------------------------------------
@config
class LeakyReluConfig:
    """Burn's `LeakyReluConfig`."""

    negative_slope: float = 0.01  # the slope for negative inputs

    def init(self, device: Any = None) -> LeakyRelu:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return LeakyRelu(self.negative_slope)


@config
class PReluConfig:
    """Burn's `PReluConfig`."""

    num_parameters: int = 1  # 1, or the number of channels (dim 1) for one slope per channel
    alpha: float = 0.25  # the slopes' initial value

    def init(self, device: Any = None) -> PRelu:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return PRelu(self.num_parameters, self.alpha, device=device)


@config
class SwiGluConfig:
    """Burn's `SwiGluConfig`."""

    d_input: int  # input features
    d_output: int  # output features
    bias: bool = False  # biases in both linear layers
    initializer: Initializer = KAIMING_DEFAULT  # how both linear layers' parameters are drawn
    layout: LinearLayout = LinearLayout.Row  # how their weights are stored in the record

    def init(self, device: Any = None) -> SwiGlu:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return SwiGlu(self.d_input, self.d_output, self.bias, self.initializer, self.layout, device=device)


@config
class HardSigmoidConfig:
    """Burn's `HardSigmoidConfig` (ONNX's defaults, not torch's 1/6)."""

    alpha: float = 0.2  # the slope
    beta: float = 0.5  # the offset

    def init(self, device: Any = None) -> HardSigmoid:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return HardSigmoid(self.alpha, self.beta)


@config
class SoftplusConfig:
    """Burn's `SoftplusConfig`."""

    beta: float = 1.0  # the sharpness: the larger, the closer to ReLU

    def init(self, device: Any = None) -> Softplus:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return Softplus(self.beta)


@config
class EluConfig:
    """Burn's `EluConfig`."""

    alpha: float = 1.0  # -alpha is the output's limit for large negative inputs

    def init(self, device: Any = None) -> Elu:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return Elu(self.alpha)


@config
class CeluConfig:
    """Burn's `CeluConfig`."""

    alpha: float = 1.0  # the scale of the negative part

    def init(self, device: Any = None) -> Celu:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return Celu(self.alpha)


@config
class ThresholdedReluConfig:
    """Burn's `ThresholdedReluConfig`."""

    alpha: float = 1.0  # the threshold

    def init(self, device: Any = None) -> ThresholdedRelu:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return ThresholdedRelu(self.alpha)


class _LambdaJson:
    """Burn's field is `lambda`, a Python keyword: `lambda_` here, `"lambda"` in the JSON."""

    def serde_value(self) -> dict[str, Any]:
        return {("lambda" if f.name == "lambda_" else f.name): getattr(self, f.name)
                for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_serde(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise TypeError("expected an object")
        return cls(**{("lambda_" if k == "lambda" else k): v for k, v in data.items()})

    def with_lambda(self, value: float) -> Any:
        """Burn's `with_lambda`: a copy with `lambda_` set.

        Args:
            value: The new threshold.
        """
        return dataclasses.replace(self, lambda_=value)  # type: ignore[type-var]


@config
class HardShrinkConfig(_LambdaJson):
    """Burn's `HardShrinkConfig` (`"lambda"` in its JSON)."""

    lambda_: float = 0.5  # the threshold (Burn's `lambda`)

    def init(self, device: Any = None) -> HardShrink:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return HardShrink(self.lambda_)


@config
class SoftShrinkConfig(_LambdaJson):
    """Burn's `SoftShrinkConfig` (`"lambda"` in its JSON)."""

    lambda_: float = 0.5  # the threshold and the shift (Burn's `lambda`)

    def init(self, device: Any = None) -> SoftShrink:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return SoftShrink(self.lambda_)


@config
class ShrinkConfig(_LambdaJson):
    """Burn's `ShrinkConfig` (`"lambda"` in its JSON)."""

    lambda_: float = 0.5  # the threshold (Burn's `lambda`)
    bias: float = 0.5  # the shift towards 0 of what passes

    def init(self, device: Any = None) -> Shrink:
        """The activation (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return Shrink(self.lambda_, self.bias)


# --- Burn's `Activation` enum ----------------------------------------------------------------------
# ActivationConfig's variants: the unit ones, and those that carry a config
_UNIT: dict[str, type[nn.Module]] = {"Gelu": Gelu, "Relu": Relu, "Selu": Selu, "Sigmoid": Sigmoid, "Tanh": Tanh,
                                     "HardSwish": HardSwish, "Softsign": Softsign}
_CONFIGURED: dict[str, Any] = {"PRelu": PReluConfig, "LeakyRelu": LeakyReluConfig, "SwiGlu": SwiGluConfig,
                                "HardSigmoid": HardSigmoidConfig, "Softplus": SoftplusConfig, "Elu": EluConfig,
                                "Celu": CeluConfig, "ThresholdedRelu": ThresholdedReluConfig,
                                "HardShrink": HardShrinkConfig, "SoftShrink": SoftShrinkConfig, "Shrink": ShrinkConfig}
# `Activation<B>`'s variants in declaration order: the record's variant index (bincode's tag)
_VARIANTS_0_21 = ("Gelu", "PRelu", "Relu", "LeakyRelu", "SwiGlu", "Selu", "Sigmoid", "Tanh", "HardSigmoid",
                  "HardSwish", "Softplus", "Softsign", "Elu", "Celu", "ThresholdedRelu", "HardShrink", "SoftShrink",
                  "Shrink")
_VARIANTS_0_19 = ("Gelu", "PRelu", "Relu", "LeakyRelu", "SwiGlu", "Sigmoid", "Tanh", "HardSigmoid")
_MODULE_VARIANT = {Gelu: "Gelu", Relu: "Relu", Selu: "Selu", Sigmoid: "Sigmoid", Tanh: "Tanh", HardSwish: "HardSwish",
                   Softsign: "Softsign", PRelu: "PRelu", LeakyRelu: "LeakyRelu", SwiGlu: "SwiGlu",
                   HardSigmoid: "HardSigmoid", Softplus: "Softplus", Elu: "Elu", Celu: "Celu",
                   ThresholdedRelu: "ThresholdedRelu", HardShrink: "HardShrink", SoftShrink: "SoftShrink",
                   Shrink: "Shrink"}


@dataclasses.dataclass(frozen=True)
class ActivationConfig:
    """Burn's `ActivationConfig` enum: `ActivationConfig.Gelu`, `.GeluApproximate`, `.Relu`, `.Selu`,
    `.Sigmoid`, `.Tanh`, `.HardSwish`, `.Softsign` (values, as Burn's unit variants), and
    `ActivationConfig.LeakyRelu(LeakyReluConfig())`, `.PRelu(...)`, `.SwiGlu(...)`, `.HardSigmoid(...)`,
    `.Softplus(...)`, `.Elu(...)`, `.Celu(...)`, `.ThresholdedRelu(...)`, `.HardShrink(...)`,
    `.SoftShrink(...)`, `.Shrink(...)`; `ActivationConfig.of(config)` is Burn's `From<...Config>`.
    JSON as Burn's: `"Gelu"`, `{"LeakyRelu": {"negative_slope": 0.01}}`.

    Attributes:
        Gelu: The exact GELU.
        GeluApproximate: The tanh approximation of GELU.
        Relu: ReLU.
        Selu: SELU.
        Sigmoid: Sigmoid.
        Tanh: Tanh.
        HardSwish: Hard swish.
        Softsign: Softsign.
        PRelu: `ActivationConfig.PRelu(PReluConfig(...))`.
        LeakyRelu: `ActivationConfig.LeakyRelu(LeakyReluConfig(...))`.
        SwiGlu: `ActivationConfig.SwiGlu(SwiGluConfig(d_input, d_output))`.
        HardSigmoid: `ActivationConfig.HardSigmoid(HardSigmoidConfig(...))`.
        Softplus: `ActivationConfig.Softplus(SoftplusConfig(...))`.
        Elu: `ActivationConfig.Elu(EluConfig(...))`.
        Celu: `ActivationConfig.Celu(CeluConfig(...))`.
        ThresholdedRelu: `ActivationConfig.ThresholdedRelu(ThresholdedReluConfig(...))`.
        HardShrink: `ActivationConfig.HardShrink(HardShrinkConfig(...))`.
        SoftShrink: `ActivationConfig.SoftShrink(SoftShrinkConfig(...))`.
        Shrink: `ActivationConfig.Shrink(ShrinkConfig(...))`.
    """

    kind: str  # the variant's name (`"Gelu"`, `"LeakyRelu"`)
    config: Any = None  # the variant's config, None for a unit variant

    Gelu: ClassVar[ActivationConfig]
    GeluApproximate: ClassVar[ActivationConfig]
    Relu: ClassVar[ActivationConfig]
    Selu: ClassVar[ActivationConfig]
    Sigmoid: ClassVar[ActivationConfig]
    Tanh: ClassVar[ActivationConfig]
    HardSwish: ClassVar[ActivationConfig]
    Softsign: ClassVar[ActivationConfig]
    PRelu: ClassVar[Callable[[PReluConfig], ActivationConfig]]
    LeakyRelu: ClassVar[Callable[[LeakyReluConfig], ActivationConfig]]
    SwiGlu: ClassVar[Callable[[SwiGluConfig], ActivationConfig]]
    HardSigmoid: ClassVar[Callable[[HardSigmoidConfig], ActivationConfig]]
    Softplus: ClassVar[Callable[[SoftplusConfig], ActivationConfig]]
    Elu: ClassVar[Callable[[EluConfig], ActivationConfig]]
    Celu: ClassVar[Callable[[CeluConfig], ActivationConfig]]
    ThresholdedRelu: ClassVar[Callable[[ThresholdedReluConfig], ActivationConfig]]
    HardShrink: ClassVar[Callable[[HardShrinkConfig], ActivationConfig]]
    SoftShrink: ClassVar[Callable[[SoftShrinkConfig], ActivationConfig]]
    Shrink: ClassVar[Callable[[ShrinkConfig], ActivationConfig]]

    def __post_init__(self) -> None:
        if self.kind in _UNIT or self.kind == "GeluApproximate":
            if self.config is not None:
                raise ValueError(f"ActivationConfig.{self.kind} takes no config")
        elif self.kind in _CONFIGURED:
            if not isinstance(self.config, _CONFIGURED[self.kind]):
                raise ValueError(f"ActivationConfig.{self.kind} takes a {_CONFIGURED[self.kind].__name__}")
        else:
            raise ValueError(f"ActivationConfig: unknown variant {self.kind!r}")

    def __call__(self) -> ActivationConfig:
        return self

    @classmethod
    def of(cls, config: Any) -> ActivationConfig:
        """The variant that holds `config` (Burn's `From<LeakyReluConfig> for ActivationConfig`, ...).

        Args:
            config: One of the activation configs above.

        Raises:
            TypeError: No variant takes that config.
        """
        for kind, config_type in _CONFIGURED.items():
            if isinstance(config, config_type):
                return cls(kind, config)
        raise TypeError(f"no ActivationConfig variant takes a {type(config).__name__}")

    def init(self, device: Any = None) -> Activation:
        """The `Activation` module of this variant.

        Args:
            device: Where a parameterised activation's parameters are created.
        """
        if self.kind == "GeluApproximate":
            return Activation(Gelu.new_approximate())
        if self.kind in _UNIT:
            return Activation(_UNIT[self.kind]())
        return Activation(self.config.init(device))

    def serde_value(self) -> Any:
        if self.config is None:
            return self.kind
        return {self.kind: self.config.to_dict()}

    @classmethod
    def from_serde(cls, data: Any) -> ActivationConfig:
        if isinstance(data, str) and (data in _UNIT or data == "GeluApproximate"):
            return cls(data)
        if isinstance(data, dict) and len(data) == 1 and next(iter(data)) in _CONFIGURED:
            (kind, values), = data.items()
            return cls(kind, _CONFIGURED[kind].from_dict(values))
        raise ValueError("expected one of Burn's ActivationConfig variants")

    def __repr__(self) -> str:
        return f"ActivationConfig.{self.kind}" + (f"({self.config!r})" if self.config is not None else "")


for _kind in (*_UNIT, "GeluApproximate"):
    setattr(ActivationConfig, _kind, ActivationConfig(_kind))


def _configured_variant(kind: str) -> Any:
    def make(config: Any) -> ActivationConfig:
        return ActivationConfig(kind, config)
    make.__name__ = kind
    return staticmethod(make)


for _kind in _CONFIGURED:
    setattr(ActivationConfig, _kind, _configured_variant(_kind))


class Activation(Module):
    """Burn's `Activation` enum module: one activation, held under its variant's name
    (`activation.Relu`). Its record is Burn's enum record: `{variant: record}` in named formats, the
    variant's index then the record in bincode (Burn 0.19's shorter variant list for 0.19 records).

    Args:
        module: One of this module's activations (`Relu()`, `LeakyReluConfig().init()`, ...).

    Raises:
        TypeError: `module` is not one of Burn's activations.
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        kind = _MODULE_VARIANT.get(type(module))
        if kind is None:
            raise TypeError(f"Activation holds one of Burn's activations, got {type(module).__name__}")
        self.kind = kind
        """The variant's name, the attribute the activation is held under."""
        self.add_module(kind, module)

    @property
    def inner(self) -> nn.Module:
        """The activation module itself."""
        module: nn.Module = self._modules[self.kind]  # type: ignore[assignment]
        return module

    def forward(self, input: Tensor) -> Tensor:
        """Apply the activation.

        Args:
            input: Any shape (`[..., d_input]` for SwiGlu).

        Returns:
            The activation's output.
        """
        out: Tensor = self.inner(input)
        return out

    def burn_record_fields(self, version: str) -> list[Field]:
        variants = _VARIANTS_0_19 if is_0_19(version) else _VARIANTS_0_21
        if self.kind not in variants:
            raise ValueError(f"Burn {version}'s Activation has no {self.kind} variant")
        inner = self.inner
        stateful = any(True for _ in inner.parameters())
        return [Field(self.kind, "module" if stateful else "nil", inner if stateful else None,
                      variant=variants.index(self.kind))]
