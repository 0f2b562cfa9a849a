"""Burn's `Unfold4d` (burn-nn `modules/unfold.rs`): `Unfold4dConfig([kh, kw]).init()`, torch's `nn.Unfold`."""

from __future__ import annotations

from typing import Any

from torch import nn

from burnlike.config import config
from burnlike.module import Module


class Unfold4d(Module, nn.Unfold):
    """Burn's `Unfold4d`: `[B, C, H, W]` → `[B, C·kh·kw, blocks]`, as torch's `nn.Unfold`."""


@config
class Unfold4dConfig:
    """Burn's `Unfold4dConfig`: stride [1, 1], dilation [1, 1], padding [0, 0]."""

    kernel_size: list[int]
    stride: list[int] = [1, 1]
    dilation: list[int] = [1, 1]
    padding: list[int] = [0, 0]

    def init(self, device: Any = None) -> Unfold4d:
        return Unfold4d(tuple(self.kernel_size), tuple(self.dilation), tuple(self.padding), tuple(self.stride))
