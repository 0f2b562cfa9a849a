"""Burn's `Embedding` (burn-nn `modules/embedding.rs`): `EmbeddingConfig(n_embedding, d_model).init(device)`."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from burnlike.config import config
from burnlike.module import Module
from burnlike.nn.initializer import Initializer
from burnlike.record.format.walker import Field

NORMAL_DEFAULT = Initializer.Normal(mean=0.0, std=1.0)
"""Burn's embedding initializer: Normal(mean 0, std 1), as torch's."""


class Embedding(Module, nn.Embedding):
    """Burn's `Embedding`: int ids `[batch, seq]` → `[batch, seq, d_model]`; its weight
    `[n_embedding, d_model]` is stored as is. Burn's initializer (default Normal(0, 1), as torch's).

    Args:
        n_embedding: The number of ids (the vocabulary's size).
        d_model: The width of an embedding.
        initializer: How the weight is drawn.
        device: Where the weight is created.
        dtype: The weight's dtype (torch's default when None).
    """

    def __init__(self, n_embedding: int, d_model: int, initializer: Initializer = NORMAL_DEFAULT, *,
                 device: Any = None, dtype: torch.dtype | None = None) -> None:
        self.initializer = initializer
        """How `reset_parameters` draws the weight."""
        super().__init__(n_embedding, d_model, device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Draw the weight again with `initializer` (Burn gives it no fans)."""
        self.initializer.fill_(self.weight)  # Burn's `init`: no fans

    def burn_record_fields(self, version: str) -> list[Field]:
        return [Field("weight", "param", self, "weight")]


@config
class EmbeddingConfig:
    """Burn's `EmbeddingConfig`: initializer Normal(mean 0, std 1)."""

    n_embedding: int  # the number of ids (the vocabulary's size)
    d_model: int  # the width of an embedding
    initializer: Initializer = NORMAL_DEFAULT  # how the weight is drawn

    def init(self, device: Any = None) -> Embedding:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return Embedding(self.n_embedding, self.d_model, self.initializer, device=device)
