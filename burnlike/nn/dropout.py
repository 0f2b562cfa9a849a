"""Burn's `Dropout` (burn-nn `modules/dropout.rs`): `DropoutConfig(prob).init()`."""

from __future__ import annotations

from typing import Any

from torch import nn

from burnlike.config import config
from burnlike.module import Module


class Dropout(Module, nn.Dropout):
    """Burn's `Dropout`: in training, zeroes each value with probability `prob` and scales the rest by
    1/(1 - prob), as torch's; the identity in evaluation (Burn: without autodiff). No record: nil.

    Args:
        prob: The probability of zeroing a value, in [0, 1].

    Raises:
        ValueError: `prob` is outside [0, 1].
    """

    def __init__(self, prob: float) -> None:
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"Dropout probability should be between 0 and 1, but got {prob}")
        super().__init__(prob)

    @property
    def prob(self) -> float:
        """The probability of zeroing a value (Burn's name for torch's `p`)."""
        return self.p


@config
class DropoutConfig:
    """Burn's `DropoutConfig(prob)` (no default, as Burn)."""

    prob: float  # the probability of zeroing a value in training, in [0, 1]

    def init(self, device: Any = None) -> Dropout:
        """The layer (Burn's `init`).

        Args:
            device: Unused: it has no parameters (Burn's signature).
        """
        return Dropout(self.prob)
