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


class Embedding(Module, nn.Embedding):
    """Burn's `Embedding`: int ids `[batch, seq]` → `[batch, seq, d_model]`; its weight
    `[n_embedding, d_model]` is stored as is. Burn's initializer (default Normal(0, 1), as torch's)."""

    def __init__(self, n_embedding: int, d_model: int, initializer: Initializer = NORMAL_DEFAULT, *,
                 device: Any = None, dtype: torch.dtype | None = None) -> None:
        self.initializer = initializer
        super().__init__(n_embedding, d_model, device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        self.initializer.fill_(self.weight)  # Burn's `init`: no fans

    def burn_record_fields(self, version: str) -> list[Field]:
        return [Field("weight", "param", self, "weight")]


@config
class EmbeddingConfig:
    """Burn's `EmbeddingConfig`: initializer Normal(mean 0, std 1)."""

    n_embedding: int
    d_model: int
    initializer: Initializer = NORMAL_DEFAULT

    def init(self, device: Any = None) -> Embedding:
        return Embedding(self.n_embedding, self.d_model, self.initializer, device=device)
