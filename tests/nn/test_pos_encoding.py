"""`burnlike.nn.pos_encoding`: Burn's `PositionalEncoding` (burn-nn `modules/pos_encoding.rs`, v0.21.0):
values transcribed from its `test_generate_sinusoids` and `test_module`."""

from __future__ import annotations

import pytest
import torch

from burnlike.nn import PositionalEncodingConfig, generate_sinusoids
from tests.nn.helpers import layout, saved_item

SINUSOIDS_12x6 = [
    [0.00000, 1.00000, 0.00000, 1.00000, 0.00000, 1.00000],
    [0.84147, 0.54030, 0.04640, 0.99892, 0.00215, 1.00000],
    [0.90930, -0.41615, 0.09270, 0.99569, 0.00431, 0.99999],
    [0.14112, -0.98999, 0.13880, 0.99032, 0.00646, 0.99998],
    [-0.75680, -0.65364, 0.18460, 0.98281, 0.00862, 0.99996],
    [-0.95892, 0.28366, 0.23000, 0.97319, 0.01077, 0.99994],
    [-0.27942, 0.96017, 0.27491, 0.96147, 0.01293, 0.99992],
    [0.65699, 0.75390, 0.31922, 0.94768, 0.01508, 0.99989],
    [0.98936, -0.14550, 0.36285, 0.93185, 0.01723, 0.99985],
    [0.41212, -0.91113, 0.40570, 0.91401, 0.01939, 0.99981],
    [-0.54402, -0.83907, 0.44767, 0.89420, 0.02154, 0.99977],
    [-0.99999, 0.00443, 0.48868, 0.87246, 0.02370, 0.99972],
]


def test_sinusoids_interleave_sin_and_cos():
    """`test_generate_sinusoids` (length 12, d_model 6, max_timescale 10000)."""
    torch.testing.assert_close(generate_sinusoids(12, 6, 10_000), torch.tensor(SINUSOIDS_12x6), atol=1e-5, rtol=0)


def test_module_adds_them_and_checks_sizes(tmp_path):
    """`test_module` (zeros [2, 3, 6] → the first three rows, per batch entry), the defaults
    (max_sequence_size 5000, max_timescale 10000), `d_model_input_should_match` and
    `input_length_should_be_less_than_max_len` (should_panic); the record is nil throughout."""
    config = PositionalEncodingConfig(6)
    assert (config.max_sequence_size, config.max_timescale) == (5_000, 10_000)
    pe = config.init()
    out = pe(torch.zeros(2, 3, 6))
    torch.testing.assert_close(out, torch.tensor([SINUSOIDS_12x6[:3]] * 2), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="d_model"):
        PositionalEncodingConfig(8).init()(torch.zeros(1, 5, 10))
    with pytest.raises(ValueError, match="max_sequence_size"):
        PositionalEncodingConfig(8).with_max_sequence_size(10).init()(torch.zeros(1, 11, 8))
    assert layout(saved_item(pe, tmp_path)) == {"sinusoids": None, "max_sequence_size": None, "max_timescale": None}
    assert "sinusoids" not in pe.state_dict()
