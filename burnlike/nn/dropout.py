"""Burn's `Dropout` (burn-nn `modules/dropout.rs`): `DropoutConfig(prob).init()`."""

from __future__ import annotations

from typing import Any

from torch import nn

from burnlike.config import config
from burnlike.module import Module


class Dropout(Module, nn.Dropout):
    """Burn's `Dropout`: in training, zeroes each value with probability `prob` and scales the rest by
    1/(1 - prob), as torch's; the identity in evaluation (Burn: without autodiff). No record: nil."""

    def __init__(self, prob: float) -> None:
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"Dropout probability should be between 0 and 1, but got {prob}")
        super().__init__(prob)

    @property
    def prob(self) -> float:
        return self.p


@config
class DropoutConfig:
    """Burn's `DropoutConfig(prob)` (no default, as Burn)."""

    prob: float

    def init(self, device: Any = None) -> Dropout:
        return Dropout(self.prob)
