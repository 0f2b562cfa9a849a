"""Loss configs shaped like Burn's (`CrossEntropyLossConfig::new().init(&device).forward(out, t)`).

`init(device=None)` takes the device only for Burn's spelling; the losses hold no tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from burnlike.config import config


class Reduction(str, Enum):
    """Burn's `Reduction::{Mean, Sum, Auto}` (`Auto` is the mean); the UPPERCASE names are aliases."""

    Mean = "mean"
    Sum = "sum"
    Auto = "mean"
    MEAN = "mean"
    SUM = "sum"
    AUTO = "mean"


@config
class CrossEntropyLossConfig:
    """Burn's `CrossEntropyLossConfig` (burn-nn `loss/cross_entropy.rs`): `pad_tokens` (any number),
    `weights` (one per class, each > 0), label `smoothing` in [0, 1], `logits` (False: the output
    holds probabilities)."""

    # target ids masked out of the loss (but counted in its mean, as Burn)
    pad_tokens: list[int] | None = None
    weights: list[float] | None = None  # one weight per class, each > 0
    smoothing: float | None = None  # label smoothing α in [0, 1]
    logits: bool = True  # the output holds logits; False: probabilities

    def init(self, device: Any = None) -> CrossEntropyLoss:
        """The loss (Burn's `init`).

        Args:
            device: Where the class weights are put.
        """
        return CrossEntropyLoss(self.pad_tokens, device, weights=self.weights, smoothing=self.smoothing,
                                logits=self.logits)


class CrossEntropyLoss(nn.Module):
    """Burn's cross-entropy (burn-nn `loss/cross_entropy.rs`), `forward(logits [B, C], targets [B])`.

    Burn's numbers: pad targets are masked out, then the loss is averaged over *all* the batch's
    targets (B), pads included; with `weights`, Σ weight·NLL over the non-pad targets divided by the
    sum of every target's weight (pads' too); with `smoothing` α, targets are one-hot·(1 - α) + α/C,
    weighted per class. `logits=False` takes probabilities (clamped to √(smallest normal) before the
    log, as Burn does without smoothing). Outputs with more dims (`[B, C, d...]`, targets `[B, d...]`)
    are flattened to `[B·d, C]` first.

    `CrossEntropyLoss(pad_index, device)` is Burn's `CrossEntropyLoss::new(pad_index, &device)`
    (`pad_index` an int, a list of them, or None).

    `with_non_pad_mean()` is PyTorch's `ignore_index` convention instead (burnlike's default before it
    followed Burn): the same sums divided by the non-pad targets' count (their weights' sum), so a
    batch's loss doesn't shrink with its padding.

    Args:
        pad_index: Target ids masked out of the loss: an int, a list, or None.
        device: Where the class weights are put.
        weights: One weight per class, each > 0.
        smoothing: Label smoothing α in [0, 1].
        logits: The output holds logits; False: probabilities.
        non_pad_mean: Average over the non-pad targets (see `with_non_pad_mean`).

    Raises:
        ValueError: A negative pad token, a smoothing outside [0, 1], a weight that isn't > 0, or a
            pad token without a weight.

    Attributes:
        pad_tokens: The pad tokens, or None.
        weights: The class weights, a float32 tensor, or None.
        smoothing: The label smoothing, or None.
        logits: Whether the output holds logits.
        non_pad_mean: Whether the mean is over the non-pad targets only.
    """

    def __init__(self, pad_index: int | Sequence[int] | None = None, device: Any = None, *,
                 weights: Sequence[float] | Tensor | None = None, smoothing: float | None = None,
                 logits: bool = True, non_pad_mean: bool = False) -> None:
        super().__init__()
        pads = [pad_index] if isinstance(pad_index, int) else list(pad_index) if pad_index is not None else None
        if pads is not None and any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in pads):
            raise ValueError(f"CrossEntropyLoss: pad tokens must be integers >= 0, got {pad_index!r}")
        if smoothing is not None and not 0.0 <= smoothing <= 1.0:
            raise ValueError("CrossEntropyLoss: alpha of cross-entropy loss with smoothed labels should be in "
                             f"interval [0, 1], got {smoothing}")
        weight = None
        if weights is not None:
            weight = torch.as_tensor(weights, dtype=torch.float32, device=device)
            if weight.dim() != 1 or not bool((weight > 0).all()):
                raise ValueError("CrossEntropyLoss: weights of cross-entropy have to be positive (one per class)")
            if pads and max(pads) >= weight.numel():
                raise ValueError(f"CrossEntropyLoss: pad token {max(pads)} has no weight ({weight.numel()} weights): "
                                 "Burn counts the pads' weights in the denominator")
        self.pad_tokens = pads or None
        self.weights = weight
        self.smoothing = smoothing
        self.logits = logits
        self.non_pad_mean = non_pad_mean

    @classmethod
    def new(cls, pad_index: int | Sequence[int] | None = None, device: Any = None) -> CrossEntropyLoss:
        """Burn's `CrossEntropyLoss::new(pad_index, &device)`.

        Args:
            pad_index: Target ids masked out of the loss: an int, a list, or None.
            device: Unused: no weights (Burn's signature).
        """
        return cls(pad_index, device)

    def with_non_pad_mean(self, enabled: bool = True) -> CrossEntropyLoss:
        """Average over the non-pad targets (PyTorch's `ignore_index`) instead of Burn's all targets.

        Args:
            enabled: Whether to; False restores Burn's mean.

        Returns:
            The loss itself, for chaining.
        """
        self.non_pad_mean = enabled
        return self

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """The loss.

        Args:
            logits: `[B, C]` (or `[B, C, d...]`): logits, or probabilities with `logits=False`.
            targets: Class ids, int64 `[B]` (or `[B, d...]`).

        Returns:
            The scalar loss.

        Raises:
            ValueError: The targets' shape doesn't match the logits' outer shape.
        """
        if self.pad_tokens is None and self.weights is None and self.smoothing is None and self.logits:
            return F.cross_entropy(logits, targets)  # Burn's plain case: the batch mean, torch's fused kernel
        if logits.dim() > 2:
            logits = logits.movedim(1, -1).reshape(-1, logits.shape[1])
            targets = targets.reshape(-1)
        if logits.dim() != 2 or targets.shape != logits.shape[:1]:
            raise ValueError(f"CrossEntropyLoss: shape of targets {tuple(targets.shape)} should correspond to the "
                             f"outer shape of the logits {tuple(logits.shape)}")
        pad = self._pad_mask(targets)
        index = targets if pad is None else targets.masked_fill(pad, 0)  # pads' rows are masked out below
        if self.smoothing is None:
            if self.logits:
                picked = torch.log_softmax(logits, 1).gather(1, index.unsqueeze(1)).squeeze(1)
            else:
                eps = torch.finfo(logits.dtype).tiny ** 0.5
                picked = logits.clamp_min(eps).gather(1, index.unsqueeze(1)).squeeze(1).log()
            if self.weights is not None:
                weight = self.weights.to(logits.device).gather(0, targets)
                return -self._masked(picked * weight, pad).sum() / self._denominator(weight, pad)
            picked = self._masked(picked, pad)
            return -picked.sum() / self._denominator(None, pad, picked.numel())
        log_probs = torch.log_softmax(logits, 1) if self.logits else logits.log()
        classes = logits.shape[1]
        smoothed = F.one_hot(index, classes).to(log_probs.dtype) * (1.0 - self.smoothing) + self.smoothing / classes
        terms = log_probs * smoothed
        if self.weights is not None:
            weights = self.weights.to(logits.device)
            terms = self._masked(terms * weights.unsqueeze(0), pad)
            return -terms.sum() / self._denominator(weights.gather(0, targets), pad)
        terms = self._masked(terms, pad)
        return -terms.sum() / self._denominator(None, pad, terms.shape[0])

    def _pad_mask(self, targets: Tensor) -> Tensor | None:
        if self.pad_tokens is None:
            return None
        if len(self.pad_tokens) == 1:
            return targets == self.pad_tokens[0]
        return torch.isin(targets, torch.tensor(self.pad_tokens, device=targets.device, dtype=targets.dtype))

    @staticmethod
    def _masked(values: Tensor, pad: Tensor | None) -> Tensor:
        if pad is None:
            return values
        return values.masked_fill(pad.reshape(-1, *([1] * (values.dim() - 1))), 0.0)

    def _denominator(self, weight: Tensor | None, pad: Tensor | None, count: int = 0) -> Tensor | float:
        """Burn's: every target (its weight); `non_pad_mean`: the non-pad targets only."""
        if weight is not None:
            return weight.masked_fill(pad, 0.0).sum() if self.non_pad_mean and pad is not None else weight.sum()
        if self.non_pad_mean and pad is not None:
            return (~pad).sum()
        return float(count)


@config
class MseLossConfig:
    """Burn's `MseLossConfig` (no fields)."""

    def init(self, device: Any = None) -> MseLoss:
        """The loss (Burn's `init`).

        Args:
            device: Unused: the loss holds no tensors (Burn's signature).
        """
        return MseLoss()


class MseLoss(nn.Module):
    """Burn's `MseLoss`: the squared error, torch's `mse_loss`."""

    def forward(self, output: Tensor, targets: Tensor, reduction: Reduction | str = Reduction.MEAN) -> Tensor:
        """The loss (Burn's `forward(output, targets, reduction)`).

        Args:
            output: The predictions.
            targets: The true values, the same shape.
            reduction: How the per-element losses are reduced: `Reduction.Mean` (the default, as `Auto`) or
                `Sum`.
        """
        return F.mse_loss(output, targets, reduction=Reduction(reduction).value)


@config
class HuberLossConfig:
    """Burn's `HuberLossConfig`."""

    delta: float  # where the loss turns from quadratic to linear

    def init(self, device: Any = None) -> HuberLoss:
        """The loss (Burn's `init`).

        Args:
            device: Unused: the loss holds no tensors (Burn's signature).
        """
        return HuberLoss(self.delta)


class HuberLoss(nn.Module):
    """Burn's `HuberLoss`: quadratic for errors up to `delta`, linear beyond, torch's `huber_loss`.

    Args:
        delta: Where the loss turns from quadratic to linear.
    """

    def __init__(self, delta: float) -> None:
        super().__init__()
        self.delta = delta
        """Where the loss turns from quadratic to linear."""

    def forward(self, output: Tensor, targets: Tensor, reduction: Reduction | str = Reduction.MEAN) -> Tensor:
        """The loss (Burn's `forward(output, targets, reduction)`).

        Args:
            output: The predictions.
            targets: The true values, the same shape.
            reduction: How the per-element losses are reduced: `Reduction.Mean` (the default, as `Auto`) or
                `Sum`.
        """
        return F.huber_loss(output, targets, reduction=Reduction(reduction).value, delta=self.delta)


@config
class BinaryCrossEntropyLossConfig:
    """Burn's `BinaryCrossEntropyLossConfig`."""

    weights: list[float] | None = None  # one weight per target column
    smoothing: float | None = None  # label smoothing α: targets become t·(1 - α) + α/2
    logits: bool = False  # the output holds logits; False (Burn's default): probabilities

    def init(self, device: Any = None) -> BinaryCrossEntropyLoss:
        """The loss (Burn's `init`).

        Args:
            device: Where the weights are put.
        """
        weight = torch.tensor(self.weights, device=device) if self.weights is not None else None
        return BinaryCrossEntropyLoss(weight, self.smoothing or 0.0, self.logits)


class BinaryCrossEntropyLoss(nn.Module):
    """Burn's `BinaryCrossEntropyLoss`, torch's `binary_cross_entropy` (`_with_logits` for logits).

    Args:
        weight: One weight per target column, or None.
        smoothing: Label smoothing α: targets become t·(1 - α) + α/2.
        logits: The output holds logits; False: probabilities.

    Attributes:
        weight: The weights, or None.
        smoothing: The label smoothing.
        logits: Whether the output holds logits.
    """

    def __init__(self, weight: Tensor | None = None, smoothing: float = 0.0, logits: bool = False) -> None:
        super().__init__()
        self.weight = weight
        self.smoothing = smoothing
        self.logits = logits

    def forward(self, output: Tensor, targets: Tensor) -> Tensor:
        """The mean loss.

        Args:
            output: `[B, T]` probabilities, or logits with `logits=True`.
            targets: 0/1 targets, the same shape (int or float).
        """
        t = targets.to(output.dtype)
        if self.smoothing:
            t = t * (1 - self.smoothing) + 0.5 * self.smoothing
        if self.logits:
            return F.binary_cross_entropy_with_logits(output, t, weight=self.weight)
        return F.binary_cross_entropy(output, t, weight=self.weight)
