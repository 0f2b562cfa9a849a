"""Burn's `Interpolate1d`/`Interpolate2d` (burn-nn `modules/interpolate/`): resize `[B, C, L]` /
`[B, C, H, W]` to `output_size` or by `scale_factor` (output = ⌊size·scale⌋)."""

from __future__ import annotations

from enum import Enum
from typing import Any

import torch.nn.functional as F
from torch import Tensor

from burnlike.config import config
from burnlike.module import Module


class InterpolateMode(str, Enum):
    """Burn's `InterpolateMode`: `Nearest` (⌊i·in/out⌋, torch's "nearest"), `Linear` (bilinear),
    `Cubic` (bicubic; 1d inputs are resized as `[B, C, 1, L]`, as Burn does). Burn's
    `Lanczos` (a 6-tap sinc filter) has no torch equivalent and is refused."""

    Nearest = "Nearest"
    Linear = "Linear"
    Cubic = "Cubic"
    Lanczos = "Lanczos"


_TORCH_MODE = {"Nearest": "nearest", "Linear": "bilinear", "Cubic": "bicubic"}


class _Interpolate(Module):
    _dims: int

    def __init__(self, output_size: Any, scale_factor: Any, mode: InterpolateMode, align_corners: bool) -> None:
        """Resize to `output_size`, or by `scale_factor`: exactly one of them.

        Args:
            output_size: The output's length (1d) or `[height, width]` (2d), or None.
            scale_factor: The factor (1d) or `[height, width]` factors (2d), or None; the output
                size is ⌊size·factor⌋.
            mode: How values are interpolated.
            align_corners: Align the corner pixels' centres (ignored by Nearest).

        Raises:
            ValueError: Both or neither of `output_size` and `scale_factor` given, or mode Lanczos.
        """
        super().__init__()
        mode = InterpolateMode(mode)
        if mode is InterpolateMode.Lanczos:
            raise ValueError(f"Interpolate{self._dims}d: mode {mode.value} has no torch equivalent here")
        if (output_size is None) == (scale_factor is None):
            raise ValueError("Either output_size or scale_factor must be provided")
        self.output_size, self.scale_factor, self.mode, self.align_corners = output_size, scale_factor, mode, align_corners

    def forward(self, input: Tensor) -> Tensor:
        """Resize.

        Args:
            input: `[B, C, L]` (1d) or `[B, C, H, W]` (2d).

        Returns:
            The resized tensor, same batch and channels.
        """
        if self.output_size is not None:
            size = list(self.output_size) if self._dims == 2 else [self.output_size]
        else:
            scales = list(self.scale_factor) if self._dims == 2 else [self.scale_factor]
            size = [int(n * s) for n, s in zip(input.shape[2:], scales)]
        mode = _TORCH_MODE[self.mode.value]
        corners = None if mode == "nearest" else self.align_corners
        if self._dims == 1:  # as Burn: a 2d resize of [B, C, 1, L]
            return F.interpolate(input.unsqueeze(2), size=[1, *size], mode=mode, align_corners=corners).squeeze(2)
        return F.interpolate(input, size=size, mode=mode, align_corners=corners)


class Interpolate1d(_Interpolate):
    """Burn's `Interpolate1d`."""

    _dims = 1


class Interpolate2d(_Interpolate):
    """Burn's `Interpolate2d`."""

    _dims = 2


@config
class Interpolate1dConfig:
    """Burn's `Interpolate1dConfig`: mode Nearest, align_corners true."""

    output_size: int | None = None  # the output's length; or scale_factor
    scale_factor: float | None = None  # the output's length is ⌊length·scale_factor⌋; or output_size
    mode: InterpolateMode = InterpolateMode.Nearest  # how values are interpolated
    align_corners: bool = True  # align the corner pixels' centres (ignored by Nearest)

    def init(self, device: Any = None) -> Interpolate1d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return Interpolate1d(self.output_size, self.scale_factor, self.mode, self.align_corners)


@config
class Interpolate2dConfig:
    """Burn's `Interpolate2dConfig`: mode Nearest, align_corners true."""

    output_size: list[int] | None = None  # the output's [height, width]; or scale_factor
    scale_factor: list[float] | None = None  # [height, width] factors, the size ⌊size·factor⌋; or output_size
    mode: InterpolateMode = InterpolateMode.Nearest  # how values are interpolated
    align_corners: bool = True  # align the corner pixels' centres (ignored by Nearest)

    def init(self, device: Any = None) -> Interpolate2d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return Interpolate2d(self.output_size, self.scale_factor, self.mode, self.align_corners)
