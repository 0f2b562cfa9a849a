"""`burnlike.nn.conv`: Burn's convolutions (burn-nn `modules/conv/`, v0.21.0): default bounds, Burn's
`Same` and asymmetric `Explicit` padding (output shapes from Burn's unit tests, values from the
convolution's definition over the padded input), and the record's fields."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from burnlike.nn import (
    Conv1dConfig,
    Conv2dConfig,
    Conv3dConfig,
    ConvTranspose1dConfig,
    ConvTranspose2dConfig,
    ConvTranspose3dConfig,
    Initializer,
    PaddingConfig1d,
    PaddingConfig2d,
    PaddingConfig3d,
)
from tests.nn.helpers import burn_file, layout, param, saved_item

ONES = Initializer.Constant(value=1.0)


def window_sums(x: np.ndarray, pads: list[tuple[int, int]], kernel: tuple[int, int]) -> np.ndarray:
    """A ones-kernel convolution of one-channel `x` [H, W]: the sum of each window of the zero-padded input."""
    padded = np.pad(x, pads)
    kh, kw = kernel
    rows, cols = padded.shape[0] - kh + 1, padded.shape[1] - kw + 1
    return np.array([[padded[i:i + kh, j:j + kw].sum() for j in range(cols)] for i in range(rows)])


def test_defaults_and_bounds_are_burns():
    """conv1d.rs/conv2d.rs `initializer_default`: |w| < √(groups / (channels_in·k)); conv_transpose*.rs:
    √(groups / (channels_out·k)). Stride and dilation 1, groups 1, Valid padding, bias."""
    config = Conv2dConfig([5, 1], [5, 5])
    assert (config.stride, config.dilation, config.groups, config.padding, config.bias) == (
        [1, 1], [1, 1], 1, PaddingConfig2d.Valid, True)
    assert config.initializer == Initializer.KaimingUniform(gain=1 / math.sqrt(3), fan_out_only=False)
    torch.manual_seed(0)
    for conv, fan in ((Conv1dConfig(5, 5, 5).init(), 25), (config.init(), 125),
                      (Conv3dConfig([4, 2], [3, 3, 3]).init(), 108), (ConvTranspose1dConfig([5, 1], 5).init(), 5),
                      (ConvTranspose2dConfig([5, 1], [5, 5]).init(), 25),
                      (ConvTranspose3dConfig([2, 4], [3, 3, 3]).init(), 108)):
        assert conv.weight.abs().max() < math.sqrt(1 / fan)
        assert conv.bias.abs().max() < math.sqrt(1 / fan)
    assert isinstance(config.init(), nn.Conv2d)
    assert Conv2dConfig([5, 2], [5, 5]).with_initializer(Initializer.Zeros).init().weight.abs().sum() == 0


def test_same_padding_keeps_the_size_even_with_an_even_kernel():
    """conv2d.rs/conv1d.rs `same_with_even_kernel_uses_asymmetric_padding`: [1, 4, 5, 5] stays
    [1, 4, 5, 5]; Burn puts the odd pad at the end (bottom/right)."""
    conv = Conv2dConfig([4, 4], [2, 2]).with_padding(PaddingConfig2d.Same).with_initializer(ONES).with_bias(False).init()
    out = conv(torch.ones(1, 4, 5, 5))
    assert out.shape == (1, 4, 5, 5)
    expected = 4 * window_sums(np.ones((5, 5)), [(0, 1), (0, 1)], (2, 2))
    np.testing.assert_array_equal(out[0, 0].detach().numpy(), expected)
    conv1 = Conv1dConfig(4, 4, 2).with_padding(PaddingConfig1d.Same).with_initializer(ONES).with_bias(False).init()
    assert conv1(torch.ones(1, 4, 5)).shape == (1, 4, 5)


def test_explicit_padding_may_be_asymmetric():
    """conv2d.rs `asymmetric_padding_forward` (top 1, left 2, bottom 3, right 4: [1, 3, 6, 9]),
    `symmetric_explicit_padding_forward` ([1, 3, 6, 7]); conv1d.rs (1, 2): [1, 3, 5]."""
    conv = Conv2dConfig([2, 3], [3, 3]).with_padding(PaddingConfig2d.Explicit(1, 2, 3, 4)).with_initializer(
        ONES).with_bias(False).init()
    out = conv(torch.ones(1, 2, 4, 5))
    assert out.shape == (1, 3, 6, 9)
    np.testing.assert_array_equal(out[0, 1].detach().numpy(), 2 * window_sums(np.ones((4, 5)), [(1, 3), (2, 4)], (3, 3)))
    symmetric = conv.__class__([2, 3], [3, 3], padding=PaddingConfig2d.Explicit(2, 2, 2, 2))
    assert symmetric(torch.ones(1, 2, 4, 5)).shape == (1, 3, 6, 7)
    conv1 = Conv1dConfig(2, 3, 3).with_padding(PaddingConfig1d.Explicit(1, 2)).with_initializer(ONES).with_bias(
        False).init()
    assert conv1(torch.ones(1, 2, 4)).tolist()[0][0] == [4.0, 6.0, 6.0, 4.0, 2.0]


def test_conv3d_and_transposed_convs_output_sizes():
    """Conv3d with Same (odd kernel) keeps the size; a transposed conv's length is
    (L - 1)·stride - 2·padding + dilation·(k - 1) + padding_out + 1."""
    conv3 = Conv3dConfig([2, 3], [3, 3, 3]).with_padding(PaddingConfig3d.Same).init()
    assert conv3(torch.ones(1, 2, 4, 5, 6)).shape == (1, 3, 4, 5, 6)
    with pytest.raises(ValueError, match="even kernel"):
        Conv3dConfig([2, 3], [2, 3, 3]).with_padding(PaddingConfig3d.Same).init()
    t1 = ConvTranspose1dConfig([2, 3], 3).with_stride(2).with_padding(1).with_padding_out(1).init()
    assert t1(torch.ones(1, 2, 5)).shape == (1, 3, (5 - 1) * 2 - 2 + 2 + 1 + 1)
    t2 = ConvTranspose2dConfig([2, 4], [3, 3]).with_initializer(ONES).with_bias(False).init()
    out = t2(torch.ones(1, 2, 2, 2))
    assert out.shape == (1, 4, 4, 4) and out[0, 0, 1, 1].item() == 2 * 4  # 2 channels x 4 overlapping inputs


def test_channels_must_divide_by_groups():
    """conv2d.rs `channels_with_groups_is_invalid` (should_panic)."""
    with pytest.raises(ValueError, match="Both channels must be divisible by the number of groups"):
        Conv2dConfig([1, 4], [1, 1]).with_groups(4).init()


def test_records_are_burns_structs(tmp_path):
    """Conv2d {weight [out, in/groups, kh, kw], bias, stride, kernel_size, dilation, groups, padding};
    ConvTranspose2d adds padding_out and channels; Burn 0.19 wrote `[usize; 2]` fields as [nil, nil]."""
    assert layout(saved_item(Conv2dConfig([4, 6], [3, 3]).with_groups(2).init(), tmp_path)) == {
        "weight": (6, 2, 3, 3), "bias": (6,), "stride": None, "kernel_size": None, "dilation": None,
        "groups": None, "padding": None}
    assert layout(saved_item(ConvTranspose2dConfig([4, 6], [3, 3]).with_bias(False).init(), tmp_path)) == {
        "weight": (4, 6, 3, 3), "bias": None, "stride": None, "kernel_size": None, "dilation": None, "groups": None,
        "padding": None, "padding_out": None, "channels": None}
    conv1 = Conv1dConfig(2, 3, 4).init()
    assert list(conv1.into_record()) == ["weight", "bias", "stride", "kernel_size", "dilation", "groups", "padding"]
    from burnlike.record.format.module_record import module_to_record

    old = module_to_record(Conv3dConfig([1, 2], [1, 1, 1]).init(), version="0.19.0")
    assert old["stride"] == [None, None, None] and old["groups"] is None
    old1 = module_to_record(ConvTranspose1dConfig([1, 2], 3).init(), version="0.19.0")
    assert old1["stride"] is None and old1["channels"] == [None, None]


def test_a_conv_record_written_as_burn_does_loads(tmp_path):
    weight = np.arange(2 * 1 * 2 * 2, dtype=np.float32).reshape(2, 1, 2, 2)
    path = burn_file(tmp_path / "conv.mpk", {"weight": param(weight), "bias": param([1.0, -1.0]), "stride": None,
                                             "kernel_size": None, "dilation": None, "groups": None, "padding": None})
    conv = Conv2dConfig([1, 2], [2, 2]).init().load_file(path)
    out = conv(torch.ones(1, 1, 2, 2))
    assert out.flatten().tolist() == [0 + 1 + 2 + 3 + 1.0, 4 + 5 + 6 + 7 - 1.0]
