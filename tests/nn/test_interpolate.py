"""`burnlike.nn.interpolate`: Burn's `Interpolate1d/2d` (burn-nn `modules/interpolate/`, v0.21.0)."""

from __future__ import annotations

import pytest
import torch

from burnlike.nn import Interpolate1dConfig, Interpolate2dConfig, InterpolateMode


def test_output_sizes_as_burns_unit_tests_compute_them():
    """interpolate2d.rs `test_calculate_output_size`/`test_module`, interpolate1d.rs the same; defaults
    Nearest and align_corners true."""
    config = Interpolate2dConfig()
    assert (config.mode, config.align_corners) == (InterpolateMode.Nearest, True)
    x = torch.rand(2, 3, 4, 4)
    assert config.with_output_size([8, 8]).init()(x).shape == (2, 3, 8, 8)
    assert config.with_scale_factor([0.5, 0.5]).init()(x).shape == (2, 3, 2, 2)
    assert config.with_scale_factor([2.0, 1.5]).init()(x).shape == (2, 3, 8, 6)
    assert config.with_output_size([6, 6]).with_mode(InterpolateMode.Linear).init()(x).shape == (2, 3, 6, 6)
    assert Interpolate1dConfig(scale_factor=1.5).init()(torch.rand(2, 3, 4)).shape == (2, 3, 6)
    with pytest.raises(ValueError, match="Either output_size or scale_factor must be provided"):
        Interpolate2dConfig().init()


def test_nearest_and_linear_values():
    """Nearest takes input ⌊i·in/out⌋ (burn-ndarray's `nearest_interpolate`); Linear with
    align_corners maps the corners onto each other: [0, 3] to 4 values is [0, 1, 2, 3]."""
    x = torch.tensor([[[0.0, 3.0]]])
    assert Interpolate1dConfig(output_size=4).init()(x).tolist() == [[[0.0, 0.0, 3.0, 3.0]]]
    linear = Interpolate1dConfig(output_size=4, mode=InterpolateMode.Linear).init()
    torch.testing.assert_close(linear(x), torch.tensor([[[0.0, 1.0, 2.0, 3.0]]]))
    with pytest.raises(ValueError, match="Lanczos"):
        Interpolate2dConfig(output_size=[2, 2], mode=InterpolateMode.Lanczos).init()
