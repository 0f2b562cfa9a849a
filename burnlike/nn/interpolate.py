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
    dims: int

    def __init__(self, output_size: Any, scale_factor: Any, mode: InterpolateMode, align_corners: bool) -> None:
        super().__init__()
        mode = InterpolateMode(mode)
        if mode is InterpolateMode.Lanczos:
            raise ValueError(f"Interpolate{self.dims}d: mode {mode.value} has no torch equivalent here")
        if (output_size is None) == (scale_factor is None):
            raise ValueError("Either output_size or scale_factor must be provided")
        self.output_size, self.scale_factor, self.mode, self.align_corners = output_size, scale_factor, mode, align_corners

    def forward(self, input: Tensor) -> Tensor:
        if self.output_size is not None:
            size = list(self.output_size) if self.dims == 2 else [self.output_size]
        else:
            scales = list(self.scale_factor) if self.dims == 2 else [self.scale_factor]
            size = [int(n * s) for n, s in zip(input.shape[2:], scales)]
        mode = _TORCH_MODE[self.mode.value]
        corners = None if mode == "nearest" else self.align_corners
        if self.dims == 1:  # as Burn: a 2d resize of [B, C, 1, L]
            return F.interpolate(input.unsqueeze(2), size=[1, *size], mode=mode, align_corners=corners).squeeze(2)
        return F.interpolate(input, size=size, mode=mode, align_corners=corners)


class Interpolate1d(_Interpolate):
    """Burn's `Interpolate1d`."""

    dims = 1


class Interpolate2d(_Interpolate):
    """Burn's `Interpolate2d`."""

    dims = 2


@config
class Interpolate1dConfig:
    """Burn's `Interpolate1dConfig`: mode Nearest, align_corners true."""

    output_size: int | None = None
    scale_factor: float | None = None
    mode: InterpolateMode = InterpolateMode.Nearest
    align_corners: bool = True

    def init(self, device: Any = None) -> Interpolate1d:
        return Interpolate1d(self.output_size, self.scale_factor, self.mode, self.align_corners)


@config
class Interpolate2dConfig:
    """Burn's `Interpolate2dConfig`: mode Nearest, align_corners true."""

    output_size: list[int] | None = None
    scale_factor: list[float] | None = None
    mode: InterpolateMode = InterpolateMode.Nearest
    align_corners: bool = True

    def init(self, device: Any = None) -> Interpolate2d:
        return Interpolate2d(self.output_size, self.scale_factor, self.mode, self.align_corners)
