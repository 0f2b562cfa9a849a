"""Burn's `PaddingConfig1d/2d/3d` (burn-nn `padding.rs`): `Valid` (none), `Same` (output size =
ceil(input / stride); an odd total puts the extra pad at the end, as ONNX), `Explicit(...)`.

`PaddingConfig2d.Explicit(top, left, bottom, right)` and `PaddingConfig1d.Explicit(left, right)` may
be asymmetric; `PaddingConfig3d.Explicit(depth, height, width)` is symmetric. JSON is Burn's:
`"Valid"`, `"Same"`, `{"Explicit": [1, 1, 1, 1]}`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import torch.nn.functional as F
from torch import Tensor


def same_padding(kernel_size: int, stride: int, size_in: int) -> tuple[int, int]:
    """Burn's `calculate_same_padding`: (start, end) so the output has ceil(size / stride) steps."""
    size_out = -(-size_in // stride)
    total = max((size_out - 1) * stride + kernel_size - size_in, 0) if size_out > 0 else 0
    start = total // 2
    return start, total - start


@dataclasses.dataclass(frozen=True)
class _Padding:
    """What Burn's padding configs share: their variants, their pairs and their JSON."""

    kind: str  # the variant: "Valid", "Same" or "Explicit"
    values: tuple[int, ...] = ()  # Explicit's sizes

    Valid: ClassVar[Any]
    """No padding."""
    Same: ClassVar[Any]
    """Padding so the output has ceil(size / stride) steps; an odd total puts the extra pad at the end."""
    _width: ClassVar[int]

    def __call__(self) -> Any:
        """`PaddingConfig2d.Valid()`: the unit variant itself."""
        return self

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(self.values))  # a list from OmegaConf or JSON
        if self.kind not in ("Valid", "Same", "Explicit"):
            raise ValueError(f"{type(self).__name__}: unknown variant {self.kind!r} (Valid, Same or Explicit)")
        if self.kind == "Explicit" and (len(self.values) != self._width or any(
                isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in self.values)):
            raise ValueError(f"{type(self).__name__}.Explicit takes {self._width} integers >= 0, got {self.values}")

    def pairs(self, sizes: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...]) -> list[tuple[int, int]]:
        """(start, end) padding per spatial dim, for inputs of `sizes`.

        Args:
            sizes: The input's spatial sizes.
            kernel: The kernel's size per spatial dim.
            stride: The stride per spatial dim.
        """
        if self.kind == "Valid":
            return [(0, 0)] * len(sizes)
        if self.kind == "Same":
            return [same_padding(k, s, n) for n, k, s in zip(sizes, kernel, stride)]
        return self._explicit_pairs()

    def _explicit_pairs(self) -> list[tuple[int, int]]:
        raise NotImplementedError

    def serde_value(self) -> str | dict[str, list[int]]:
        return self.kind if self.kind != "Explicit" else {"Explicit": list(self.values)}

    @classmethod
    def from_serde(cls, data: Any) -> Any:
        if data in ("Valid", "Same"):
            return cls(data)
        if isinstance(data, dict) and list(data) == ["Explicit"] and isinstance(data["Explicit"], list):
            return cls("Explicit", tuple(data["Explicit"]))
        raise ValueError(f'expected "Valid", "Same" or {{"Explicit": [{cls._width} sizes]}}')

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}.{self.kind}" + (f"({', '.join(map(str, self.values))})" if self.kind == "Explicit" else "")


@dataclasses.dataclass(frozen=True, repr=False)
class PaddingConfig1d(_Padding):
    """Burn's `PaddingConfig1d`: `Valid`, `Same` or `Explicit(left, right)`."""

    _width: ClassVar[int] = 2

    @classmethod
    def Explicit(cls, left: int, right: int) -> PaddingConfig1d:  # noqa: N802 (Burn's variant names)
        """Zeros added on each side (Burn 0.21: may differ).

        Args:
            left: Before the sequence.
            right: After it.
        """
        return cls("Explicit", (left, right))

    def _explicit_pairs(self) -> list[tuple[int, int]]:
        return [(self.values[0], self.values[1])]


@dataclasses.dataclass(frozen=True, repr=False)
class PaddingConfig2d(_Padding):
    """Burn's `PaddingConfig2d`: `Valid`, `Same` or `Explicit(top, left, bottom, right)`."""

    _width: ClassVar[int] = 4

    @classmethod
    def Explicit(cls, top: int, left: int, bottom: int, right: int) -> PaddingConfig2d:  # noqa: N802
        """Zeros added on each side (Burn 0.21's order; they may differ).

        Args:
            top: Above the image.
            left: On its left.
            bottom: Below it.
            right: On its right.
        """
        return cls("Explicit", (top, left, bottom, right))

    def _explicit_pairs(self) -> list[tuple[int, int]]:
        top, left, bottom, right = self.values
        return [(top, bottom), (left, right)]


@dataclasses.dataclass(frozen=True, repr=False)
class PaddingConfig3d(_Padding):
    """Burn's `PaddingConfig3d`: `Valid`, `Same` or `Explicit(depth, height, width)`, symmetric."""

    _width: ClassVar[int] = 3

    @classmethod
    def Explicit(cls, depth: int, height: int, width: int) -> PaddingConfig3d:  # noqa: N802
        """Zeros added on both sides of each dim.

        Args:
            depth: On both sides of the depth.
            height: On both sides of the height.
            width: On both sides of the width.
        """
        return cls("Explicit", (depth, height, width))

    def _explicit_pairs(self) -> list[tuple[int, int]]:
        return [(v, v) for v in self.values]


for _cls in (PaddingConfig1d, PaddingConfig2d, PaddingConfig3d):
    _cls.Valid = _cls("Valid")
    _cls.Same = _cls("Same")


def symmetric_or_pad(x: Tensor, pairs: list[tuple[int, int]], value: float = 0.0,
                     most: tuple[int, ...] | None = None) -> tuple[Tensor, list[int]]:
    """What the op's own `padding=` can do (the same on both sides, at most `most`: torch's pools
    take half their window), and `x` padded for the rest: Burn pads asymmetric cases explicitly
    first (with `value`: 0, or -inf for max pooling)."""
    if all(a == b for a, b in pairs) and (most is None or all(a <= m for (a, _), m in zip(pairs, most))):
        return x, [a for a, _ in pairs]
    flat = [v for a, b in reversed(pairs) for v in (a, b)]  # F.pad: last dim first
    return F.pad(x, flat, value=value), [0] * len(pairs)
