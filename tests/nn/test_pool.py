"""`burnlike.nn.pool`: Burn's pooling (burn-nn `modules/pool/`, v0.21.0): strides default to the
kernel size, `Same`/asymmetric padding (shapes from Burn's unit tests; values from the pooling's
definition: max pools pad with -inf, average pools with counted zeros)."""

from __future__ import annotations

import pytest
import torch

from burnlike.module import Module
from burnlike.nn import (
    AdaptiveAvgPool1dConfig,
    AdaptiveAvgPool2dConfig,
    AvgPool1dConfig,
    AvgPool2dConfig,
    MaxPool1dConfig,
    MaxPool2dConfig,
    PaddingConfig1d,
    PaddingConfig2d,
)
from tests.nn.helpers import saved_item


@pytest.mark.parametrize("kernel", [[2, 2], [1, 2]])
def test_strides_default_to_the_kernel_size(kernel):
    """max_pool2d.rs/avg_pool2d.rs `default_strides_match_kernel_size`; dilation 1, no ceil mode,
    average pools count padding."""
    assert MaxPool2dConfig(kernel).strides == kernel and AvgPool2dConfig(kernel).strides == kernel
    assert MaxPool1dConfig(3).stride == 3 and AvgPool1dConfig(3).stride == 3
    config = MaxPool2dConfig(kernel)
    assert (config.padding, config.dilation, config.ceil_mode) == (PaddingConfig2d.Valid, [1, 1], False)
    assert AvgPool2dConfig(kernel).count_include_pad is True
    assert MaxPool2dConfig(kernel).to_dict()["strides"] == kernel


def test_max_pool_pads_with_minus_infinity():
    """`same_with_even_kernel_uses_asymmetric_padding` ([1, 2, 5, 5] kept), `asymmetric_padding_forward`
    ([1, 2, 6, 9]); a padded window over negative values keeps its input maximum."""
    same = MaxPool2dConfig([2, 2]).with_strides([1, 1]).with_padding(PaddingConfig2d.Same).init()
    assert same(torch.ones(1, 2, 5, 5)).shape == (1, 2, 5, 5)
    asym = MaxPool2dConfig([3, 3]).with_strides([1, 1]).with_padding(PaddingConfig2d.Explicit(1, 2, 3, 4)).init()
    out = asym(-torch.ones(1, 2, 4, 5))
    assert out.shape == (1, 2, 6, 9) and out.max().item() == -1.0
    x = torch.tensor([[[1.0, 5.0, 2.0, 4.0, 3.0]]])
    assert MaxPool1dConfig(2).with_stride(1).with_padding(PaddingConfig1d.Same).init()(x).tolist() == [[[5, 5, 4, 4, 3]]]
    assert MaxPool2dConfig([2, 2]).init()(torch.arange(16.0).reshape(1, 1, 4, 4)).tolist() == [[[[5, 7], [13, 15]]]]


def test_avg_pool_counts_asymmetric_padding_as_zeros():
    """avg_pool2d.rs `asymmetric_padding_forward` ([1, 2, 6, 9]); Burn pads first, so corners average
    over 9 with the zeros counted."""
    pool = AvgPool2dConfig([3, 3]).with_strides([1, 1]).with_padding(PaddingConfig2d.Explicit(1, 2, 3, 4)).init()
    out = pool(torch.ones(1, 2, 4, 5))
    assert out.shape == (1, 2, 6, 9)
    assert out[0, 0, 0, 0].item() == pytest.approx(2 / 9)  # the top-left window holds two input values
    symmetric = AvgPool2dConfig([3, 3]).with_strides([1, 1]).with_padding(PaddingConfig2d.Explicit(2, 2, 2, 2)).init()
    assert symmetric(torch.ones(1, 2, 4, 5)).shape == (1, 2, 6, 7)
    x = torch.tensor([[[1.0, 2.0, 3.0, 4.0]]])
    assert AvgPool1dConfig(2).init()(x).tolist() == [[[1.5, 3.5]]]


def test_adaptive_average_windows():
    """Window i spans [⌊i·L/n⌋, ⌈(i+1)·L/n⌉): 5 values into 3 → means of [0,2), [1,4), [3,5)."""
    x = torch.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]])
    assert AdaptiveAvgPool1dConfig(3).init()(x).tolist() == [[[1.5, 3.0, 4.5]]]
    out = AdaptiveAvgPool2dConfig([8, 8]).init()(torch.ones(2, 16, 24, 24))
    assert out.shape == (2, 16, 8, 8)


class Holder(Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = MaxPool2dConfig([2, 2]).init()
        self.scale = torch.nn.Parameter(torch.ones(1))


def test_pools_are_nil_in_records(tmp_path):
    assert saved_item(Holder(), tmp_path)["pool"] is None
