"""Sequence metrics (Burn 0.19): `CER`, `WER` (in %) and `Perplexity`, fed by `SequenceOutput`.

CER and WER compare token ids with the Levenshtein distance on the host, as Burn does (one
transfer per step); the batch value is 100·Σdistance/Σtarget length, weighted by batch size.
Perplexity keeps the token-weighted mean negative log-likelihood and reports its exponential.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from burnlike.train.metric.base import Metric, MetricContext, Number
from burnlike.train.output import CER, PERPLEXITY, WER


def edit_distance(reference: Sequence[int], prediction: Sequence[int]) -> int:
    """Levenshtein distance (substitution, insertion, deletion all cost 1), two rows of the table."""
    prev = list(range(len(prediction) + 1))
    for i, r in enumerate(reference):
        curr = [i + 1]
        for j, p in enumerate(prediction):
            curr.append(prev[j] if r == p else 1 + min(prev[j], prev[j + 1], curr[j]))
        prev = curr
    return prev[-1]


def _rate(pairs: list[tuple[list[int], list[int]]]) -> float:
    distance = sum(edit_distance(target, output) for output, target in pairs)
    length = sum(len(target) for _, target in pairs)
    return 100.0 * distance / length if length else 0.0


class _ErrorRate(Metric):
    input = ""
    unit = "%"
    higher_is_better = False

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__()
        self.pad_token = pad_token

    def with_pad_token(self, index: int) -> Any:
        self.pad_token = index
        return self

    def pairs(self, outputs: list[list[int]], targets: list[list[int]]) -> list[tuple[list[int], list[int]]]:
        raise NotImplementedError

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        outputs, targets = item.predicted_tokens(), item.targets
        if outputs.shape != targets.shape or outputs.dim() != 2:
            raise ValueError(f"{self.name}: predictions {tuple(outputs.shape)} and targets {tuple(targets.shape)} "
                             "must both be [batch, sequence]")
        pairs = self.pairs(outputs.tolist(), targets.tolist())
        return _rate(pairs), targets.shape[0]


class CharErrorRate(_ErrorRate):
    """`CER` in %: with a pad token, each sequence is cut to its count of non-pad tokens (as Burn)."""

    name = "CER"
    input = CER

    def pairs(self, outputs: list[list[int]], targets: list[list[int]]) -> list[tuple[list[int], list[int]]]:
        pad = self.pad_token
        if pad is None:
            return list(zip(outputs, targets))
        return [(_first_kept(o, pad), _first_kept(t, pad)) for o, t in zip(outputs, targets)]


class WordErrorRate(_ErrorRate):
    """`WER` in %: token ids are words; with a pad token, each sequence ends at its first pad."""

    name = "WER"
    input = WER

    def pairs(self, outputs: list[list[int]], targets: list[list[int]]) -> list[tuple[list[int], list[int]]]:
        pad = self.pad_token
        if pad is None:
            return list(zip(outputs, targets))
        return [(_until(o, pad), _until(t, pad)) for o, t in zip(outputs, targets)]


def _first_kept(seq: list[int], pad: int) -> list[int]:
    """The first n tokens, n = how many are not padding (Burn's CER lengths)."""
    return seq[: sum(token != pad for token in seq)]


def _until(seq: list[int], pad: int) -> list[int]:
    return seq[: seq.index(pad)] if pad in seq else seq


class PerplexityMetric(Metric):
    """`Perplexity`: exp(Σ NLL / Σ tokens) over the epoch (pad tokens excluded).

    Each step keeps its mean NLL and token count on the device; the epoch value is the exponential of
    their synced weighted mean, so it is the perplexity of the whole epoch, not a mean of batch
    perplexities. The log lines are Burn's: the running epoch perplexity and the tokens so far.
    """

    name = "Perplexity"
    input = PERPLEXITY
    higher_is_better = False

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__()
        self.pad_token = pad_token

    def with_pad_token(self, index: int) -> PerplexityMetric:
        self.pad_token = index
        return self

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        logits: Tensor = item.output.detach()
        targets: Tensor = item.targets
        log_probs = torch.log_softmax(logits.reshape(-1, logits.shape[-1]).float(), dim=-1)
        flat = targets.reshape(-1)
        nll = -log_probs.gather(1, flat.unsqueeze(1)).squeeze(1)
        if self.pad_token is None:
            return nll.mean(), flat.numel()
        keep = flat != self.pad_token
        tokens = keep.sum()
        return (nll * keep).sum() / tokens.clamp_min(1), tokens

    def running(self) -> float:
        return _exp(super().running())

    def finish_epoch(self) -> tuple[float, list[tuple[float, float]]]:
        value, history = super().finish_epoch()
        lines, total, tokens = [], 0.0, 0.0
        for nll, count in history:
            total, tokens = total + nll * count, tokens + count
            lines.append((_exp(total / tokens) if tokens else math.inf, tokens))
        return _exp(value), lines


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf
