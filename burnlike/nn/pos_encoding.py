"""Burn's `PositionalEncoding` (burn-nn `modules/pos_encoding.rs`):
`PositionalEncodingConfig(d_model).init(device)` adds fixed sinusoids to `[B, L, d_model]`."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from burnlike.config import config
from burnlike.module import Module


def generate_sinusoids(length: int, d_model: int, max_timescale: int, device: Any = None) -> Tensor:
    """Burn's `generate_sinusoids`: `[length, d_model]` with, for each even k, sin(i·w_k) at k and
    cos(i·w_k) at k + 1, w_k = exp(-k·ln(max_timescale)/d_model) (interleaved, as Burn; computed in f32).

    Args:
        length: The positions.
        d_model: The width; even.
        max_timescale: The longest wavelength's scale; at least `length`.
        device: Where the tensor is made.

    Raises:
        ValueError: An odd `d_model`, or `max_timescale` below `length`.
    """
    if d_model % 2:
        raise ValueError("d_model must be even")
    if max_timescale < length:
        raise ValueError("max_timescale must be greater than length")
    k = torch.arange(0, d_model, 2, dtype=torch.float32)
    div_term = torch.exp(k * (-math.log(max_timescale) / d_model))
    angles = torch.arange(length, dtype=torch.float32).unsqueeze(1) * div_term.unsqueeze(0)
    return torch.stack([angles.sin(), angles.cos()], dim=2).reshape(length, d_model).to(device)


class PositionalEncoding(Module):
    """Burn's `PositionalEncoding`: `x + sinusoids[:, :L]`. The sinusoids are a non-persistent buffer
    (nil in Burn's record, as are the sizes).

    Args:
        max_sequence_size: The longest sequence it encodes.
        d_model: The width; even.
        max_timescale: The longest wavelength's scale; at least `max_sequence_size`.
        device: Where the sinusoids are made.

    Attributes:
        max_sequence_size: The longest sequence it encodes.
        max_timescale: The longest wavelength's scale.
    """

    __burn_fields__ = ("sinusoids", "max_sequence_size", "max_timescale")

    sinusoids: Tensor
    """`[1, max_sequence_size, d_model]` (a non-persistent buffer)."""

    def __init__(self, max_sequence_size: int, d_model: int, max_timescale: int, *, device: Any = None) -> None:
        super().__init__()
        self.max_sequence_size, self.max_timescale = max_sequence_size, max_timescale
        self.register_buffer("sinusoids", generate_sinusoids(max_sequence_size, d_model, max_timescale, device)
                             .unsqueeze(0), persistent=False)

    def forward(self, input: Tensor) -> Tensor:
        """Add the encoding.

        Args:
            input: `[B, L, d_model]`, L at most `max_sequence_size`.

        Returns:
            The same shape.

        Raises:
            ValueError: The sequence is too long, or its width is not `d_model`.
        """
        _, length, d_model = input.shape
        if length > self.sinusoids.shape[1]:
            raise ValueError(f"max_sequence_size({self.sinusoids.shape[1]}) must be greater or equal than "
                             f"length({length})")
        if d_model != self.sinusoids.shape[2]:
            raise ValueError(f"d_model({d_model}) of the input must be equal to d_model of encoding"
                             f"({self.sinusoids.shape[2]})")
        return input + self.sinusoids[:, :length]


@config
class PositionalEncodingConfig:
    """Burn's `PositionalEncodingConfig(d_model)`: max_sequence_size 5000, max_timescale 10000."""

    d_model: int  # the width; even
    max_sequence_size: int = 5_000  # the longest sequence it encodes
    max_timescale: int = 10_000  # the longest wavelength's scale; at least max_sequence_size

    def init(self, device: Any = None) -> PositionalEncoding:
        """The layer (Burn's `init`).

        Args:
            device: Where the sinusoids are made.
        """
        return PositionalEncoding(self.max_sequence_size, self.d_model, self.max_timescale, device=device)
