"""Burn's `Initializer` (burn-core `module/initializer.rs`): how a parameter's first values are drawn.

`Initializer.Zeros`, `Initializer.Ones` (values, as Burn's unit variants), `Initializer.Constant(value=)`,
`Uniform(min=, max=)`, `Normal(mean=, std=)`, `KaimingUniform(gain=, fan_out_only=)`,
`KaimingNormal(...)`, `XavierUniform(gain=)`, `XavierNormal(gain=)`, `Orthogonal(gain=)`.

Burn's formulas, drawn with torch's generator (`burnlike.seed` seeds it; Burn's own random numbers
can't be reproduced):
- KaimingUniform: U(-a, a), a = √3 · gain / √fan (fan_in, or fan_out with `fan_out_only`);
  KaimingNormal: N(0, gain / √fan). Burn's layers pass `gain = 1/√3`, so their default bound is
  1/√fan_in — torch's `nn.Linear`/`nn.Conv*` bound too, but torch reaches it through
  `kaiming_uniform_(a=√5)`; torch's `kaiming_*_` default gain is √2 (ReLU), Burn's is what you pass.
- XavierUniform: U(-a, a), a = √3 · gain · √(2 / (fan_in + fan_out)); XavierNormal: N(0, gain · √(2 /
  (fan_in + fan_out))), as torch's `xavier_*_`.
- Orthogonal: torch's `orthogonal_` algorithm (QR of a standard normal draw of [rows, numel/rows],
  columns signed by R's diagonal), times `gain`.

Its JSON is Burn's (serde's enum shape): `"Zeros"`, `{"Constant": {"value": 2.0}}`,
`{"KaimingUniform": {"gain": 0.577…, "fan_out_only": false}}`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

# Burn's variants and their fields, in declaration order (the JSON's key order)
_VARIANTS: dict[str, tuple[str, ...]] = {
    "Constant": ("value",),
    "Ones": (),
    "Zeros": (),
    "Uniform": ("min", "max"),
    "Normal": ("mean", "std"),
    "KaimingUniform": ("gain", "fan_out_only"),
    "KaimingNormal": ("gain", "fan_out_only"),
    "XavierUniform": ("gain",),
    "XavierNormal": ("gain",),
    "Orthogonal": ("gain",),
}


@dataclasses.dataclass(frozen=True)
class Initializer:
    """One of Burn's initializers; build it with the variant's name (`Initializer.KaimingUniform(gain=1.0,
    fan_out_only=False)`) or take the unit variants `Initializer.Zeros`/`Initializer.Ones`.

    Attributes:
        Zeros: All zeros.
        Ones: All ones.
    """

    kind: str  # the variant's name ("KaimingUniform")
    value: float | None = None  # Constant's value
    min: float | None = None  # Uniform's lower bound
    max: float | None = None  # Uniform's upper bound
    mean: float | None = None  # Normal's mean
    std: float | None = None  # Normal's standard deviation
    gain: float | None = None  # the Kaiming, Xavier and Orthogonal scale
    fan_out_only: bool = False  # Kaiming's fan is fan_out instead of fan_in

    Zeros: ClassVar[Initializer]
    Ones: ClassVar[Initializer]

    def __post_init__(self) -> None:
        if self.kind not in _VARIANTS:
            raise ValueError(f"Initializer: unknown variant {self.kind!r} (one of {', '.join(_VARIANTS)})")
        for name in _VARIANTS[self.kind]:
            if name != "fan_out_only" and getattr(self, name) is None:
                raise ValueError(f"Initializer.{self.kind} needs {name}")

    def __call__(self) -> Initializer:
        """`Initializer.Zeros()`: the unit variant itself."""
        return self

    @classmethod
    def Constant(cls, value: float) -> Initializer:  # noqa: N802 (Burn's variant names)
        """Every value `value`.

        Args:
            value: The value.
        """
        return cls("Constant", value=float(value))

    @classmethod
    def Uniform(cls, min: float, max: float) -> Initializer:  # noqa: N802
        """U(min, max).

        Args:
            min: The lower bound.
            max: The upper bound.
        """
        return cls("Uniform", min=float(min), max=float(max))

    @classmethod
    def Normal(cls, mean: float, std: float) -> Initializer:  # noqa: N802
        """N(mean, std).

        Args:
            mean: The mean.
            std: The standard deviation.
        """
        return cls("Normal", mean=float(mean), std=float(std))

    @classmethod
    def KaimingUniform(cls, gain: float, fan_out_only: bool = False) -> Initializer:  # noqa: N802
        """U(-a, a), a = √3 · gain / √fan.

        Args:
            gain: The scale: Burn's layers pass 1/√3.
            fan_out_only: Use fan_out, not fan_in.
        """
        return cls("KaimingUniform", gain=float(gain), fan_out_only=fan_out_only)

    @classmethod
    def KaimingNormal(cls, gain: float, fan_out_only: bool = False) -> Initializer:  # noqa: N802
        """N(0, gain / √fan).

        Args:
            gain: The scale.
            fan_out_only: Use fan_out, not fan_in.
        """
        return cls("KaimingNormal", gain=float(gain), fan_out_only=fan_out_only)

    @classmethod
    def XavierUniform(cls, gain: float) -> Initializer:  # noqa: N802
        """U(-a, a), a = √3 · gain · √(2 / (fan_in + fan_out)).

        Args:
            gain: The scale.
        """
        return cls("XavierUniform", gain=float(gain))

    @classmethod
    def XavierNormal(cls, gain: float) -> Initializer:  # noqa: N802
        """N(0, gain · √(2 / (fan_in + fan_out))).

        Args:
            gain: The scale.
        """
        return cls("XavierNormal", gain=float(gain))

    @classmethod
    def Orthogonal(cls, gain: float) -> Initializer:  # noqa: N802
        """An orthogonal matrix (rows flattened past the first dimension), times `gain`.

        Args:
            gain: The scale.
        """
        return cls("Orthogonal", gain=float(gain))

    # --- drawing ---------------------------------------------------------------------------------
    def init(self, shape: Sequence[int], device: Any = None, dtype: torch.dtype | None = None) -> nn.Parameter:
        """Burn's `init(shape, &device)`: a new parameter, without fans (Kaiming/Xavier need them).

        Args:
            shape: The parameter's shape.
            device: Where it is created.
            dtype: Its dtype (torch's default when None).

        Raises:
            ValueError: A Kaiming or Xavier initializer, which needs fans.
        """
        return self.init_with(shape, None, None, device, dtype)

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Any = None,
                  dtype: torch.dtype | None = None) -> nn.Parameter:
        """Burn's `init_with(shape, fan_in, fan_out, &device)`: a new parameter.

        Args:
            shape: The parameter's shape.
            fan_in: The inputs each output sees (Kaiming's fan, Xavier's).
            fan_out: The outputs each input reaches (Xavier's, and Kaiming's with `fan_out_only`).
            device: Where it is created.
            dtype: Its dtype (torch's default when None).

        Raises:
            ValueError: A fan the initializer needs is None.
        """
        tensor = torch.empty(tuple(shape), device=device, dtype=dtype)
        return nn.Parameter(self.fill_(tensor, fan_in, fan_out))

    @torch.no_grad()
    def fill_(self, tensor: Tensor, fan_in: int | None = None, fan_out: int | None = None) -> Tensor:
        """Draw `tensor`'s values in place (an existing parameter: `init.fill_(linear.weight, 5, 3)`).

        Args:
            tensor: The tensor to fill.
            fan_in: The inputs each output sees.
            fan_out: The outputs each input reaches.

        Returns:
            `tensor`.

        Raises:
            ValueError: A fan the initializer needs is None, or Orthogonal on a tensor of rank < 2.
        """
        kind = self.kind
        if kind == "Constant":
            return tensor.fill_(self.value)  # type: ignore[arg-type]
        if kind in ("Ones", "Zeros"):
            return tensor.fill_(1.0 if kind == "Ones" else 0.0)
        if kind == "Uniform":
            return tensor.uniform_(self.min, self.max)  # type: ignore[arg-type]
        if kind == "Normal":
            return tensor.normal_(self.mean, self.std)  # type: ignore[arg-type]
        if kind == "Orthogonal":
            return self._orthogonal_(tensor)
        gain: float = self.gain  # type: ignore[assignment]
        if kind.startswith("Kaiming"):
            fan = fan_out if self.fan_out_only else fan_in
            if fan is None:
                raise ValueError("Can't use Kaiming initialization without specifying fan. Use init_with method.")
            std = gain / math.sqrt(fan)
        else:
            if fan_in is None or fan_out is None:
                raise ValueError("Can't use Xavier initialization without specifying fan in and fan out. Use "
                                 "init_with method and provide fan_in and fan_out.")
            std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        if kind.endswith("Uniform"):
            bound = math.sqrt(3.0) * std
            return tensor.uniform_(-bound, bound)
        return tensor.normal_(0.0, std)

    def _orthogonal_(self, tensor: Tensor) -> Tensor:
        if tensor.dim() < 2:
            raise ValueError(f"Orthogonal initialization needs a tensor of rank >= 2, got shape {list(tensor.shape)}")
        rows = tensor.shape[0]
        cols = tensor.numel() // rows
        draw = torch.randn(rows, cols, device=tensor.device, dtype=torch.float32)
        if rows < cols:
            draw = draw.t()
        q, r = torch.linalg.qr(draw)
        q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)
        if rows < cols:
            q = q.t()
        return tensor.copy_(q.reshape(tensor.shape) * self.gain)

    # --- Burn's JSON -----------------------------------------------------------------------------
    def serde_value(self) -> str | dict[str, dict[str, Any]]:
        names = _VARIANTS[self.kind]
        if not names:
            return self.kind
        return {self.kind: {name: getattr(self, name) for name in names}}

    @classmethod
    def from_serde(cls, data: Any) -> Initializer:
        if isinstance(data, str) and data in _VARIANTS and not _VARIANTS[data]:
            return cls(data)
        if isinstance(data, dict) and len(data) == 1:
            (kind, values), = data.items()
            if kind in _VARIANTS and isinstance(values, dict) and set(values) == set(_VARIANTS[kind]):
                return cls(kind, **values)
        raise ValueError(f"expected one of Burn's Initializer variants ({', '.join(_VARIANTS)}) with their fields")

    def __repr__(self) -> str:
        names = _VARIANTS[self.kind]
        if not names:
            return f"Initializer.{self.kind}"
        return f"Initializer.{self.kind}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"


Initializer.Zeros = Initializer("Zeros")
Initializer.Ones = Initializer("Ones")

KAIMING_DEFAULT = Initializer.KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)
"""Burn's layers' default, `KaimingUniform { gain: 1/√3, fan_out_only: false }`: a ±1/√fan_in bound."""
