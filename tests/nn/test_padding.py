"""`burnlike.nn.padding`: Burn's `PaddingConfig1d/2d/3d` (burn-nn `padding.rs`, v0.21.0): the pads its
unit tests compute, and the JSON serde writes."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from burnlike.config import config
from burnlike.nn import PaddingConfig1d, PaddingConfig2d, PaddingConfig3d


def test_pads_as_burns_unit_tests_compute_them():
    """`test_padding_config_1d_calculate_pair_*`, `_2d_calculate_pairs_*`, `_3d_calculate_*`."""
    assert PaddingConfig1d.Valid.pairs((10,), (3,), (1,)) == [(0, 0)]
    assert PaddingConfig1d.Explicit(1, 2).pairs((10,), (3,), (1,)) == [(1, 2)]
    assert PaddingConfig1d.Same.pairs((10,), (3,), (1,)) == [(1, 1)]
    assert PaddingConfig2d.Explicit(1, 2, 3, 4).pairs((10, 10), (3, 3), (1, 1)) == [(1, 3), (2, 4)]
    assert PaddingConfig3d.Explicit(1, 2, 3).pairs((10, 10, 10), (3, 3, 3), (1, 1, 1)) == [(1, 1), (2, 2), (3, 3)]
    assert PaddingConfig3d.Same.pairs((10, 10, 10), (3, 3, 3), (1, 1, 1)) == [(1, 1)] * 3


def test_same_puts_the_odd_pad_at_the_end_and_honours_the_stride():
    """`calculate_same_padding`: output ceil(size / stride); total (out - 1)·stride + k - size."""
    assert PaddingConfig2d.Same.pairs((5, 5), (2, 2), (1, 1)) == [(0, 1), (0, 1)]
    assert PaddingConfig1d.Same.pairs((10,), (3,), (2,)) == [(0, 1)]  # 5 outputs need 11 inputs


def test_json_is_serdes_and_explicit_checks_its_values():
    @config
    class Holder:
        padding: PaddingConfig2d = PaddingConfig2d.Valid

    assert Holder().to_dict() == {"padding": "Valid"}
    explicit = Holder(PaddingConfig2d.Explicit(1, 2, 3, 4))
    assert explicit.to_dict() == {"padding": {"Explicit": [1, 2, 3, 4]}}
    assert Holder.from_dict({"padding": {"Explicit": [1, 2, 3, 4]}}) == explicit
    assert Holder.from_dict({"padding": "Same"}).padding == PaddingConfig2d.Same
    assert OmegaConf.to_object(OmegaConf.structured(explicit)) == explicit  # a Hydra structured config too
    with pytest.raises(ValueError, match="Explicit takes 4 integers"):
        PaddingConfig2d("Explicit", (1, 2))
