"""Burn's `RotaryEncoding` (burn-nn `modules/rope_encoding.rs`):
`RotaryEncodingConfig(max_sequence_length, d_model).init(device)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from burnlike.config import config
from burnlike.module import Module


def _frequencies(start: int, end: int, theta: Tensor) -> Tensor:
    """`[positions, d_model, 2]`: (cos, sin) of position·theta_i, each pair repeated for dims 2i, 2i+1."""
    angles = torch.arange(start, end, dtype=theta.dtype, device=theta.device).unsqueeze(1) * theta.unsqueeze(0)
    pairs = torch.stack([angles.cos(), angles.sin()], dim=2)  # [n, d/2, 2]
    return pairs.repeat_interleave(2, dim=1)


class RotaryEncoding(Module):
    """Burn's `RotaryEncoding`: rotates each pair (x_2i, x_2i+1) of the last dim by position·theta_i,
    theta_i = theta^(-2i/d_model) (interleaved pairs, as Burn; not the half-split layout some models
    use). `forward(x [..., L, d_model])`, `apply_at(x, start)` (Burn's `apply`) from position `start`,
    `shift(start)` slides the precomputed window. Its tensors are nil in Burn's record.

    Args:
        max_sequence_length: The positions precomputed.
        d_model: The width; even.
        theta: The frequencies' base; > 0.
        scaling: A function of the frequencies `[d_model/2]` returning the ones to use (long-context
            frequency scaling).
        device: Where the tensors are made.

    Raises:
        ValueError: An odd `d_model`, or `theta` not > 0.
    """

    __burn_fields__ = ("freq_complex", "theta", "start_offset")

    freq_complex: Tensor
    """`[max_sequence_length, d_model, 2]`: the (cos, sin) per position and dim (a non-persistent buffer)."""
    theta: Tensor
    """The frequencies theta_i, `[d_model/2]` (a non-persistent buffer)."""

    def __init__(self, max_sequence_length: int, d_model: int, theta: float = 10000.0,
                 scaling: Callable[[Tensor], Tensor] | None = None, *, device: Any = None) -> None:
        super().__init__()
        if d_model % 2:
            raise ValueError("The input embedding dimension must be even")
        if theta <= 0:
            raise ValueError("Theta parameter must be positive (default: 10000).")
        exponent = torch.arange(0, d_model, 2, dtype=torch.float32, device=device) / d_model
        freqs = torch.exp(exponent * torch.log(torch.tensor(theta, dtype=torch.float32))).reciprocal()
        if scaling is not None:
            freqs = scaling(freqs)
        self.register_buffer("theta", freqs, persistent=False)
        self.register_buffer("freq_complex", _frequencies(0, max_sequence_length, freqs), persistent=False)
        self.start_offset = 0
        """The position the precomputed window starts at (`shift` moves it)."""

    def forward(self, x: Tensor) -> Tensor:
        """Rotate from position 0.

        Args:
            x: `[..., L, d_model]`.

        Returns:
            The same shape.
        """
        return self.apply_at(x, 0)

    def apply_at(self, x: Tensor, start: int) -> Tensor:
        """Burn's `apply(x, start)` (`apply` is torch's name for visiting submodules).

        Args:
            x: `[..., L, d_model]`.
            start: The first position's index in the precomputed window.

        Returns:
            The same shape.
        """
        length = x.shape[-2]
        freqs = self.freq_complex[start:start + length].to(x.dtype)  # [L, d, 2]
        pairs = x.reshape(*x.shape[:-1], -1, 2)
        rotated = torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).reshape(x.shape)  # (-x_odd, x_even)
        return x * freqs[..., 0] + rotated * freqs[..., 1]

    def shift(self, start: int) -> None:
        """Burn's `shift`: the window now starts at `start` (increasing only).

        Args:
            start: The new first position, above the current one.

        Raises:
            ValueError: `start` is not above the current start.
        """
        if start <= self.start_offset:
            raise ValueError("Shift start position must be monotonically increasing")
        length = self.freq_complex.shape[0]
        self.freq_complex = _frequencies(start, start + length, self.theta)
        self.start_offset = start


@config
class RotaryEncodingConfig:
    """Burn's `RotaryEncodingConfig(max_sequence_length, d_model)`: theta 10000."""

    max_sequence_length: int  # the positions precomputed
    d_model: int  # the width; even
    theta: float = 10000.0  # the frequencies' base; > 0

    def init(self, device: Any = None) -> RotaryEncoding:
        """The layer (Burn's `init`).

        Args:
            device: Where the tensors are made.
        """
        return RotaryEncoding(self.max_sequence_length, self.d_model, self.theta, device=device)

    def init_with_frequency_scaling(self, scaling: Callable[[Tensor], Tensor], device: Any = None) -> RotaryEncoding:
        """Burn's `init_with_frequency_scaling(scaling, &device)`: the layer with scaled frequencies.

        Args:
            scaling: A function of the frequencies `[d_model/2]` returning the ones to use.
            device: Where the tensors are made.
        """
        return RotaryEncoding(self.max_sequence_length, self.d_model, self.theta, scaling, device=device)
