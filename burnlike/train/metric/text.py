"""Sequence metrics (Burn 0.19): `CER`, `WER` (in %) and `Perplexity`, fed by `SequenceOutput`.

CER and WER compare token ids with the Levenshtein distance on the host, as Burn does (one
transfer per step); the batch value is 100·Σdistance/Σtarget length, weighted by batch size.
Perplexity logs Burn's running epoch perplexity and reports Burn's aggregate of those lines;
`CorpusPerplexityMetric` reports the exact exp(Σ NLL / Σ tokens).
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
        """An edit-distance rate over token ids.

        Args:
            pad_token: A token id left out (Burn's `with_pad_token`); None: none.
        """
        super().__init__()
        self.pad_token = pad_token
        """The pad token, or None."""

    def with_pad_token(self, index: int) -> Any:
        """Burn's `with_pad_token(index)`: leave that token id out; the metric itself.

        Args:
            index: The pad token's id.
        """
        self.pad_token = index
        return self

    def _pairs(self, outputs: list[list[int]], targets: list[list[int]]) -> list[tuple[list[int], list[int]]]:
        raise NotImplementedError

    def batch_value(self, item: Any, ctx: MetricContext) -> tuple[Number, Number]:
        outputs, targets = item.predicted_tokens(), item.targets
        if outputs.shape != targets.shape or outputs.dim() != 2:
            raise ValueError(f"{self.name}: predictions {tuple(outputs.shape)} and targets {tuple(targets.shape)} "
                             "must both be [batch, sequence]")
        pairs = self._pairs(outputs.tolist(), targets.tolist())
        return _rate(pairs), targets.shape[0]


class CharErrorRate(_ErrorRate):
    """`CER` in %: with a pad token, each sequence is cut to its count of non-pad tokens (as Burn)."""

    name = "CER"
    input = CER

    def _pairs(self, outputs: list[list[int]], targets: list[list[int]]) -> list[tuple[list[int], list[int]]]:
        pad = self.pad_token
        if pad is None:
            return list(zip(outputs, targets))
        return [(_first_kept(o, pad), _first_kept(t, pad)) for o, t in zip(outputs, targets)]


class WordErrorRate(_ErrorRate):
    """`WER` in %: token ids are words; with a pad token, each sequence ends at its first pad."""

    name = "WER"
    input = WER

    def _pairs(self, outputs: list[list[int]], targets: list[list[int]]) -> list[tuple[list[int], list[int]]]:
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
    """`Perplexity` as Burn 0.21 reports it (burn-train `metric/perplexity.rs`, `metric/store/aggregate.rs`).

    Each step logs Burn's line: the epoch's perplexity so far, exp(Σ NLL / Σ tokens), and the tokens
    so far (pad tokens excluded). The epoch value is Burn's aggregate of those lines, their
    token-weighted mean Σ line·tokens / Σ tokens, which weighs the early, noisier running values too
    (a first batch of pads only logs (inf, 0), which makes Burn's value NaN). The exact perplexity of
    the epoch, exp(Σ NLL / Σ tokens), is `CorpusPerplexityMetric`. Each step keeps its mean NLL and
    token count on the device; the progress display shows the perplexity so far.
    """

    name = "Perplexity"
    input = PERPLEXITY
    higher_is_better = False

    def __init__(self, pad_token: int | None = None) -> None:
        """Burn's perplexity.

        Args:
            pad_token: A token id left out (Burn's `with_pad_token`); None: none.
        """
        super().__init__()
        self.pad_token = pad_token
        """The pad token, or None."""

    def with_pad_token(self, index: int) -> Any:
        """Burn's `with_pad_token(index)`: leave that token id out; the metric itself.

        Args:
            index: The pad token's id.
        """
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
        history = self.host_history()
        lines = running_perplexity(history)
        value = self.epoch_value(history, lines)
        self.reset()
        return value, lines

    def epoch_value(self, history: list[tuple[float, float]], lines: list[tuple[float, float]]) -> float:
        """Burn's: the token-weighted mean of the logged lines (every rank's).

        Args:
            history: This rank's `(mean NLL, tokens)` steps.
            lines: Its perplexity lines, `(perplexity so far, tokens so far)`.
        """
        return self.synced_mean(lines)


class CorpusPerplexityMetric(PerplexityMetric):
    """`Corpus Perplexity`: the exact perplexity of the epoch, exp(Σ NLL / Σ tokens) over all its
    tokens (every rank's; pads excluded), where Burn's `Perplexity` averages its running lines.
    Its log lines are Burn's perplexity lines; its last line is its epoch value."""

    name = "Corpus Perplexity"

    def epoch_value(self, history: list[tuple[float, float]], lines: list[tuple[float, float]]) -> float:
        """exp of the token-weighted mean NLL over every rank's steps.

        Args:
            history: This rank's `(mean NLL, tokens)` steps.
            lines: Its perplexity lines (logged, not used for the value).
        """
        return _exp(self.synced_mean(history))


def running_perplexity(history: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Burn's perplexity lines from the steps' (mean NLL, tokens): the perplexity so far and the
    tokens so far (inf while no token is counted yet)."""
    lines, total, tokens = [], 0.0, 0.0
    for nll, count in history:
        total, tokens = total + nll * count, tokens + count
        lines.append((_exp(total / tokens) if tokens else math.inf, tokens))
    return lines


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf
