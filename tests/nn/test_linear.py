"""`burnlike.nn.linear`: Burn's `Linear` (burn-nn `modules/linear.rs`, v0.21.0): defaults, forward
values from its unit tests, the record's `[d_input, d_output]` weight (and `LinearLayout.Col`'s
`[d_output, d_input]`), and a record laid out as Burn writes it loading in."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from burnlike.nn import Initializer, Linear, LinearConfig, LinearLayout
from tests.nn.helpers import burn_file, layout, param, saved_item, values


def test_defaults_are_burns():
    """linear.rs `initializer_default`: KaimingUniform(gain 1/√3, fan_out_only false), weights within
    ±√(1/d_input); bias on, Row layout."""
    config = LinearConfig(5, 5)
    assert config.initializer == Initializer.KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)
    assert config.bias is True and config.layout is LinearLayout.Row
    torch.manual_seed(0)
    linear = LinearConfig(400, 300).init()
    k = math.sqrt(1.0 / 400)
    assert linear.weight.abs().max() < k and linear.bias.abs().max() < k and linear.weight.abs().max() > 0.95 * k
    assert isinstance(linear, nn.Linear)
    assert config.to_dict() == {"d_input": 5, "d_output": 5, "bias": True,
                                "initializer": {"KaimingUniform": {"gain": 1.0 / math.sqrt(3.0), "fan_out_only": False}},
                                "layout": "Row"}


def test_forward_with_and_without_bias():
    """`test_linear_forward_with_bias` ([[6, 6, 6]]), `_no_bias` ([[4, 4, 4]]), `test_linear_1d`."""
    with_bias = LinearConfig(2, 3).with_initializer(Initializer.Constant(value=2.0)).init()
    assert with_bias(torch.ones(1, 2)).tolist() == [[6.0, 6.0, 6.0]]
    no_bias = LinearConfig(2, 3).with_initializer(Initializer.Constant(value=2.0)).with_bias(False).init()
    assert no_bias(torch.ones(1, 2)).tolist() == [[4.0, 4.0, 4.0]] and no_bias.bias is None
    assert torch.equal(with_bias(torch.ones(2)), with_bias(torch.ones(1, 2))[0])


def test_record_stores_the_weight_d_input_by_d_output(tmp_path):
    linear = LinearConfig(2, 3).init()
    item = saved_item(linear, tmp_path)
    assert layout(item) == {"weight": (2, 3), "bias": (3,)}
    np.testing.assert_array_equal(values(item["weight"]), linear.weight.detach().t().numpy())
    assert layout(saved_item(LinearConfig(2, 3).with_bias(False).init(), tmp_path)) == {"weight": (2, 3), "bias": None}


def test_col_layout_stores_d_output_by_d_input_and_draws_with_burns_fans(tmp_path):
    """linear.rs `layout`: a Col record's weight is `[d_output, d_input]`, and it loads into a Row
    Linear of the transposed size; Col passes fan_in = d_output to the initializer."""
    col = LinearConfig(6, 12).with_layout(LinearLayout.Col).with_bias(False).init()
    item = saved_item(col, tmp_path)
    assert layout(item)["weight"] == (12, 6)
    np.testing.assert_array_equal(values(item["weight"]), col.weight.detach().numpy())
    row = LinearConfig(12, 6).with_bias(False).init().load_file(tmp_path / "saved.mpk")
    assert torch.equal(row.weight, col.weight.t())
    torch.manual_seed(0)
    drawn = LinearConfig(400, 100).with_layout(LinearLayout.Col).init()
    assert drawn.weight.abs().max() > 1.0 / math.sqrt(400)  # the bound is 1/√d_output = 0.1


def test_a_record_laid_out_as_burn_writes_it_loads(tmp_path):
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)  # Burn's [d_input, d_output]
    path = burn_file(tmp_path / "linear.mpk", {"weight": param(weight), "bias": param([0.5, -0.5, 1.0])})
    linear: Linear = LinearConfig(2, 3).init().load_file(path)
    assert linear.weight.tolist() == weight.T.tolist()
    assert linear(torch.tensor([[1.0, 1.0]])).tolist() == [[3.5, 4.5, 8.0]]
