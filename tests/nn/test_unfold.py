"""`burnlike.nn.unfold`: Burn's `Unfold4d` (burn-nn `modules/unfold.rs`, v0.21.0)."""

from __future__ import annotations

import torch

from burnlike.nn import Unfold4dConfig


def test_defaults_and_blocks():
    """Defaults stride [1, 1], dilation [1, 1], padding [0, 0]; [B, C, H, W] → [B, C·kh·kw, blocks],
    each column one kernel window in row-major order."""
    config = Unfold4dConfig([2, 2])
    assert (config.stride, config.dilation, config.padding) == ([1, 1], [1, 1], [0, 0])
    x = torch.arange(9.0).reshape(1, 1, 3, 3)
    out = config.init()(x)
    assert out.shape == (1, 4, 4)
    assert out[0, :, 0].tolist() == [0.0, 1.0, 3.0, 4.0] and out[0, :, 3].tolist() == [4.0, 5.0, 7.0, 8.0]
    assert config.with_stride([2, 2]).with_padding([1, 1]).init()(x).shape == (1, 4, 4)
