"""`burnlike.nn.rope_encoding`: Burn's `RotaryEncoding` (burn-nn `modules/rope_encoding.rs`, v0.21.0):
values transcribed from its unit tests."""

from __future__ import annotations

import pytest
import torch

from burnlike.nn import RotaryEncodingConfig

INPUT = torch.tensor([[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
                      [[9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]])
EXPECTED = torch.tensor([[[1.0000, 2.0000, 3.0000, 4.0000], [-2.3473, 7.4492, 6.9197, 8.0696]],
                         [[9.0000, 10.0000, 11.0000, 12.0000], [-4.7567, 18.5034, 14.8393, 16.1492]]])


def test_forward_rotates_pairs_by_position():
    """`test_rotary_encoding_forward` (4-d input) and `test_rotary_encoding_3d`; theta defaults to 10000."""
    rope = RotaryEncodingConfig(10, 4).init()
    assert RotaryEncodingConfig(10, 4).theta == 10000.0
    torch.testing.assert_close(rope(INPUT), EXPECTED, atol=1e-4, rtol=0)
    torch.testing.assert_close(rope(INPUT.unsqueeze(0))[0], EXPECTED, atol=1e-4, rtol=0)
    assert rope(torch.zeros(1, 2, 2, 4)).abs().sum() == 0


def test_frequencies_with_and_without_scaling():
    """`test_rotary_encoding_frequencies` and `test_rotary_encoding_with_frequency_scaling` (Llama 3's
    scaling by parts, as the test writes it)."""
    expected = torch.tensor([[[1.0, 0.0]] * 4,
                             [[5.4030e-01, 8.4147e-01], [9.9500e-01, 9.9833e-02], [9.9995e-01, 9.9998e-03],
                              [9.9999e-01, 9.9999e-04]]]).repeat_interleave(2, dim=1)
    torch.testing.assert_close(RotaryEncodingConfig(2, 8).init().freq_complex, expected, atol=1e-5, rtol=0.005)

    def by_parts(freqs: torch.Tensor) -> torch.Tensor:
        scale, low, high, old = 8.0, 1.0, 4.0, 8192.0
        wavelen = 2 * torch.pi / freqs
        smooth = (old / wavelen - low) / (high - low)
        scaled = torch.where(wavelen >= old / high, (1 - smooth) * freqs / scale + smooth * freqs, freqs)
        scaled = torch.where(wavelen > old / low, freqs / scale, scaled)
        return torch.where(wavelen < old / high, freqs, scaled)

    scaled = RotaryEncodingConfig(2, 8).init_with_frequency_scaling(by_parts).freq_complex
    torch.testing.assert_close(scaled[1, 6:], torch.tensor([[1.0, 2.1361e-04]] * 2), atol=1e-5, rtol=0.005)


def test_shift_and_apply_at_a_start_agree():
    """`test_rotary_encoding_shift_full`, `test_rotary_encoding_shift`, `..._should_increase`."""
    long = RotaryEncodingConfig(10, 4).init()
    for start in (6, 2):
        short = RotaryEncodingConfig(4, 4).init()
        short.shift(start)
        torch.testing.assert_close(short.apply_at(INPUT, 0), long.apply_at(INPUT, start))
    short = RotaryEncodingConfig(4, 4).init()
    short.shift(6)
    with pytest.raises(ValueError, match="monotonically increasing"):
        short.shift(4)
    with pytest.raises(ValueError, match="even"):
        RotaryEncodingConfig(10, 15).init()
