"""`burnlike.nn.initializer`: Burn's `Initializer` (burn-core `module/initializer.rs`, v0.21.0): each
variant's bounds and variances as Burn's unit tests check them, and its JSON as serde writes it."""

from __future__ import annotations

import math

import pytest
import torch

from burnlike.nn import Initializer


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_constant_ones_and_zeros_fill_the_tensor():
    """initializer.rs `initializer_constant_init` (sum of [2,2,2,2] = 16·value), `_zeros_init`, `_ones_init`."""
    assert Initializer.Constant(value=5.0).init([2, 2, 2, 2]).sum().item() == 5.0 * 16
    assert Initializer.Zeros.init([2, 2, 2, 2]).sum().item() == 0.0
    assert Initializer.Ones.init([2, 2, 2, 2]).sum().item() == 16.0
    assert isinstance(Initializer.Ones.init([3]), torch.nn.Parameter)


def test_uniform_and_normal_draw_within_burns_tolerances():
    """`initializer_uniform_init` (values in [min, max)), `initializer_normal_init` (10000 draws: mean
    within ±0.1 of 0, variance in (0.9, 1.1))."""
    uniform = Initializer.Uniform(min=0.0, max=1.0).init([2, 2, 2, 2])
    assert uniform.min() >= 0.0 and uniform.max() < 1.0
    normal = Initializer.Normal(mean=0.0, std=1.0).init([10000])
    var, mean = torch.var_mean(normal)
    assert 0.9 < var < 1.1 and -0.1 < mean < 0.1


def test_kaiming_uniform_bound_is_gain_times_root_3_over_fan():
    """`initializer_kaiming_uniform_init`: gain 2, fan_in 5 → |x| < 2·√(3/5); with `fan_out_only`,
    fan_out 6 → 2·√(3/6); a bias (`_init_bias`) the same bound."""
    weight = Initializer.KaimingUniform(gain=2.0).init_with([6, 5], 5, None)
    bound = 2.0 * math.sqrt(3.0 / 5)
    assert weight.abs().max() < bound and weight.abs().max() > 0.8 * bound  # spread over the whole range
    out_only = Initializer.KaimingUniform(gain=2.0, fan_out_only=True).init_with([6, 5], None, 6)
    assert out_only.abs().max() < 2.0 * math.sqrt(3.0 / 6)
    assert Initializer.KaimingUniform(gain=2.0).init_with([3], 5, None).abs().max() < bound


def test_kaiming_normal_variance_is_gain_squared_over_fan_in():
    """`initializer_kaiming_normal_init`: gain 2, fan_in 1000 → variance (2·√(1/1000))² = 0.004."""
    weight = Initializer.KaimingNormal(gain=2.0).init_with([10, 1000], 1000, None)
    var, mean = torch.var_mean(weight)
    assert abs(var.item() - 0.004) < 0.0004 and abs(mean.item()) < 0.01


def test_xavier_bounds_and_variance():
    """`initializer_xavier_uniform_init` (gain 2, fans 5/6: |x| < 2·√(6/11)), `_xavier_normal_init`
    (gain 2, fans 1000/10: variance 4·2/1010)."""
    uniform = Initializer.XavierUniform(gain=2.0).init_with([6, 5], 5, 6)
    assert uniform.abs().max() < 2.0 * math.sqrt(6.0 / 11)
    normal = Initializer.XavierNormal(gain=2.0).init_with([10, 1000], 1000, 10)
    assert abs(torch.var(normal).item() - 8.0 / 1010) < 0.0008


def test_kaiming_and_xavier_without_fans_fail_as_burns_panic():
    """`initializer_kaiming_uniform_no_fan`, `initializer_xavier_uniform_no_fan` (should_panic)."""
    with pytest.raises(ValueError, match="Kaiming initialization without specifying fan"):
        Initializer.KaimingUniform(gain=2.0).init([6, 5])
    with pytest.raises(ValueError, match="Xavier initialization without specifying fan"):
        Initializer.XavierUniform(gain=2.0).init([6, 5])


def test_orthogonal_gives_orthonormal_columns_of_any_shape():
    """`initializer_orthogonal_correct` (QᵀQ ≈ I for 10×10), `_orthogonal_init` (shapes [25, 30] and
    [24, 6, 85] kept), `_orthogonal_init_1d` (should_panic)."""
    q = Initializer.Orthogonal(gain=1.0).init([10, 10])
    assert torch.allclose(q.t() @ q, torch.eye(10), atol=1e-5)
    wide = Initializer.Orthogonal(gain=1.0).init([25, 30])
    assert wide.shape == (25, 30) and torch.allclose(wide @ wide.t(), torch.eye(25), atol=1e-5)
    assert Initializer.Orthogonal(gain=1.0).init([24, 6, 85]).shape == (24, 6, 85)
    assert torch.allclose(Initializer.Orthogonal(gain=3.0).init([4, 4]).norm(dim=0), torch.full((4,), 3.0))
    with pytest.raises(ValueError, match="rank >= 2"):
        Initializer.Orthogonal(gain=1.0).init([3])


def test_json_is_serdes_enum_shape():
    """`#[derive(Config)] enum Initializer`: unit variants as their name, struct variants as
    `{name: {fields}}` in declaration order."""
    assert Initializer.Zeros.serde_value() == "Zeros"
    assert Initializer.KaimingUniform(gain=0.5).serde_value() == {"KaimingUniform": {"gain": 0.5, "fan_out_only": False}}
    assert list(Initializer.Uniform(min=-1, max=1).serde_value()["Uniform"]) == ["min", "max"]
    for init in (Initializer.Ones, Initializer.Constant(value=2.0), Initializer.Normal(mean=0.0, std=1.0),
                 Initializer.XavierNormal(gain=1.0), Initializer.Orthogonal(gain=1.0)):
        assert Initializer.from_serde(init.serde_value()) == init
    with pytest.raises(ValueError, match="Initializer variants"):
        Initializer.from_serde({"Kaiming": {"gain": 1.0}})
    with pytest.raises(ValueError, match="needs gain"):
        Initializer("XavierUniform")
