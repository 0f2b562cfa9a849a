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

    kernel_size: list[int]  # the block's [height, width]
    stride: list[int] = [1, 1]  # the step between blocks, [height, width]
    dilation: list[int] = [1, 1]  # the spacing between a block's elements, [height, width]
    padding: list[int] = [0, 0]  # zeros added on each side, [height, width]

    def init(self, device: Any = None) -> Unfold4d:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return Unfold4d(tuple(self.kernel_size), tuple(self.dilation), tuple(self.padding), tuple(self.stride))
