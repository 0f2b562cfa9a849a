"""Burn's attention (burn-nn `modules/attention/`): `MultiHeadAttentionConfig(d_model, n_heads)`, `MhaInput`,
`MhaOutput`, `MhaCache`, and the masks `generate_autoregressive_mask` and `generate_padding_mask`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch
from torch import Tensor

from burnlike.checks import positive_int
from burnlike.config import config
from burnlike.module import Module
from burnlike.nn.activation import Gelu
from burnlike.nn.cache import TensorCache
from burnlike.nn.dropout import Dropout
from burnlike.nn.initializer import KAIMING_DEFAULT, Initializer
from burnlike.nn.linear import Linear

# --- masks -----------------------------------------------------------------------------------------


def generate_autoregressive_mask(batch_size: int, seq_length: int, device: Any = None) -> Tensor:
    """Burn's `generate_autoregressive_mask(batch_size, seq_length, &device)`: bool `[B, L, L]`, `True`
    above the diagonal — the future positions attention must not see (Burn masks where `True`).

    Args:
        batch_size: B.
        seq_length: L.
        device: Where the mask is made.
    """
    mask = torch.ones(seq_length, seq_length, dtype=torch.bool, device=device).triu(1)
    return mask.expand(batch_size, seq_length, seq_length)


@dataclasses.dataclass(frozen=True)
class SeqLengthOption:
    """Burn's `SeqLengthOption` (burn-nn `modules/attention/mask.rs`): `SeqLengthOption.NoMax` (the
    longest sequence), `SeqLengthOption.Max(n)` (that, at most `n`), `SeqLengthOption.Fixed(n)`
    (exactly `n`: pad or truncate). `NoMax` is a value, as Burn's unit variant; `NoMax()` returns it
    too. Its JSON is Burn's (serde's enum shape): `"NoMax"`, `{"Max": 256}`, `{"Fixed": 256}`.

    Attributes:
        NoMax: Pad to the longest sequence.
    """

    kind: str  # "no_max", "max" or "fixed"
    length: int | None = None  # the length of Max and Fixed
    NoMax: ClassVar[SeqLengthOption]

    def __call__(self) -> SeqLengthOption:
        """`SeqLengthOption.NoMax()`, burnlike's earlier spelling of the unit variant: itself."""
        return self

    @classmethod
    def Max(cls, length: int) -> SeqLengthOption:  # noqa: N802 (Burn's variant names)
        """Pad to the longest sequence, truncate to `length` at most.

        Args:
            length: The longest length allowed, at least 1.
        """
        return cls("max", _positive(length))

    @classmethod
    def Fixed(cls, length: int) -> SeqLengthOption:  # noqa: N802
        """Pad or truncate every sequence to `length`.

        Args:
            length: The length, at least 1.
        """
        return cls("fixed", _positive(length))

    @classmethod
    def of(cls, value: SeqLengthOption | int | None) -> SeqLengthOption:
        """Burn's `From<Option<usize>>`: `None` is `NoMax`, `n` is `Max(n)`.

        Args:
            value: An option (returned as is), a length or None.
        """
        if isinstance(value, SeqLengthOption):
            return value
        return cls.NoMax if value is None else cls.Max(value)

    def resolve(self, longest: int) -> int:
        """The length to pad to.

        Args:
            longest: The longest sequence's length.
        """
        if self.kind == "fixed":
            return int(self.length)  # type: ignore[arg-type]
        if self.kind == "max":
            return min(longest, int(self.length))  # type: ignore[arg-type]
        return longest

    def serde_value(self) -> str | dict[str, int]:
        """Burn's JSON: `"NoMax"`, `{"Max": n}` or `{"Fixed": n}`."""
        if self.kind == "no_max":
            return "NoMax"
        return {"Max" if self.kind == "max" else "Fixed": int(self.length)}  # type: ignore[arg-type]

    @classmethod
    def from_serde(cls, data: Any) -> SeqLengthOption:
        if data == "NoMax":
            return cls.NoMax
        if isinstance(data, dict) and len(data) == 1 and next(iter(data)) in ("Max", "Fixed"):
            (variant, length), = data.items()
            return cls.Max(length) if variant == "Max" else cls.Fixed(length)
        raise ValueError('expected "NoMax", {"Max": <length>} or {"Fixed": <length>}')


SeqLengthOption.NoMax = SeqLengthOption("no_max")


def _positive(length: int) -> int:
    return positive_int(length, "a sequence length")


class GeneratePaddingMask(NamedTuple):
    """Burn's `GeneratePaddingMask { tensor, mask }`: the padded int64 tokens `[B, L]` and the mask,
    `True` where a token is the pad token. A named tuple, so `tokens, mask = ...` works too.

    Attributes:
        tensor: The tokens, int64 `[B, L]`.
        mask: Bool `[B, L]`, `True` at pad tokens.
    """

    tensor: Tensor
    mask: Tensor


def generate_padding_mask(pad_token: int, tokens_list: Sequence[Sequence[int]],
                          seq_length: SeqLengthOption | int | None = None, device: Any = None) -> GeneratePaddingMask:
    """Burn's `generate_padding_mask(pad_token, tokens_list, seq_length, &device)` (burn-nn
    `modules/attention/mask.rs`): the tokens padded (or truncated) to one length — the longest
    (`NoMax`), at most n (`Max(n)`, or an int), exactly n (`Fixed(n)`) — on `device`, and the mask
    that is `True` where a token is the pad token. An empty batch has length 1.

    Args:
        pad_token: The pad token's id.
        tokens_list: One list of token ids per sequence.
        seq_length: The length to pad to: a `SeqLengthOption`, an int (`Max(n)`), or None
            (`NoMax`).
        device: Where the tensors are made.
    """
    longest = max((len(t) for t in tokens_list), default=1)
    size = SeqLengthOption.of(seq_length).resolve(longest)
    tokens = np.full((len(tokens_list), size), pad_token, dtype=np.int64)
    for row, seq in enumerate(tokens_list):
        n = min(len(seq), size)
        tokens[row, :n] = seq[:n]
    tensor = torch.from_numpy(tokens)
    if device is not None:
        tensor = tensor.to(device)
    return GeneratePaddingMask(tensor, tensor == pad_token)


# --- multi-head attention --------------------------------------------------------------------------


def quiet_softmax(x: Tensor, dim: int) -> Tensor:
    """Burn's `quiet_softmax`: exp(x_i) / (1 + Σ_j exp(x_j)), computed shifted by the (detached) max,
    so a row of masked scores can attend to nothing.

    Args:
        x: The scores.
        dim: The dimension to normalise over.
    """
    top = x.detach().amax(dim=dim, keepdim=True)
    e = torch.exp(x - top)
    return e / (e.sum(dim=dim, keepdim=True) + torch.exp(-top))


class MhaInput:
    """Burn's `MhaInput`: `MhaInput.self_attn(x)` or `MhaInput(query, key, value)` (`[B, L, d_model]`),
    then `.mask_pad(bool [B, L_k])` and `.mask_attn(bool [B, L_q, L_k])` (`True`: masked).

    Args:
        query: `[B, L_q, d_model]`.
        key: `[B, L_k, d_model]`.
        value: `[B, L_k, d_model]`.

    Attributes:
        query: The queries.
        key: The keys.
        value: The values.
        pad: The padding mask, or None.
        attn: The attention mask, or None.
    """

    def __init__(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        self.query, self.key, self.value = query, key, value
        self.pad: Tensor | None = None
        self.attn: Tensor | None = None

    @classmethod
    def new(cls, query: Tensor, key: Tensor, value: Tensor) -> MhaInput:
        """Burn's `MhaInput::new(query, key, value)`: cross-attention.

        Args:
            query: `[B, L_q, d_model]`.
            key: `[B, L_k, d_model]`.
            value: `[B, L_k, d_model]`.
        """
        return cls(query, key, value)

    @classmethod
    def self_attn(cls, tensor: Tensor) -> MhaInput:
        """Burn's `MhaInput::self_attn(tensor)`: queries, keys and values all `tensor`.

        Args:
            tensor: `[B, L, d_model]`.
        """
        return cls(tensor, tensor, tensor)

    def mask_pad(self, mask_pad: Tensor | None) -> MhaInput:
        """Mask padded keys (Burn's `mask_pad`); the input itself, for chaining.

        Args:
            mask_pad: Bool `[B, L_k]`, `True` at the keys no query may attend to.
        """
        self.pad = mask_pad
        return self

    def mask_attn(self, mask_attn: Tensor | None) -> MhaInput:
        """Mask query-key pairs (Burn's `mask_attn`); the input itself, for chaining.

        Args:
            mask_attn: Bool `[B, L_q, L_k]`, `True` where a query may not attend to a key
                (`generate_autoregressive_mask`).
        """
        self.attn = mask_attn
        return self


class MhaOutput(NamedTuple):
    """Burn's `MhaOutput`.

    Attributes:
        weights: The attention weights, `[B, n_heads, L_q, L_k]`.
        context: The output, `[B, L_q, d_model]`.
    """

    weights: Tensor
    context: Tensor


class MhaCache:
    """Burn's `MhaCache`: `MhaCache.autoregressive()` (self-attention) or
    `MhaCache.autoregressive_cross_attention()` (keys and values from a fixed memory, computed once).

    Args:
        cross: Cross-attention: keys and values come from a memory that doesn't grow.
    """

    def __init__(self, cross: bool) -> None:
        self.query, self.key, self.value, self.output = TensorCache(), TensorCache(), TensorCache(), TensorCache()
        self.cross = cross
        """Whether it caches cross-attention."""

    @classmethod
    def autoregressive(cls) -> MhaCache:
        """A cache for autoregressive self-attention."""
        return cls(False)

    @classmethod
    def autoregressive_cross_attention(cls) -> MhaCache:
        """A cache for cross-attention over a fixed memory."""
        return cls(True)


class MultiHeadAttention(Module):
    """Burn's `MultiHeadAttention` (burn-nn `modules/attention/mha.rs`), Burn's numbers rather than
    `torch.nn.MultiheadAttention`'s:
    - dropout acts on the scaled scores `QKᵀ/√d_k`, before the masks and the softmax;
    - masked scores are set to `min_float` (-1e4), not -inf;
    - `quiet_softmax` (off by default) divides by 1 + Σ exp instead of Σ exp;
    - the four `[d_model, d_model]` projections use Burn's initializer (KaimingUniform, gain 1/√3:
      ±1/√d_model; torch uses Xavier uniform for the input projection) and have biases.
    Record: `query, key, value, output` (Linear records), then nil for `dropout, activation, d_model,
    n_heads, d_k, min_float, quiet_softmax`.

    Args:
        d_model: The model's width, split over the heads.
        n_heads: The number of heads; divides `d_model`.
        dropout: Dropout probability on the scaled scores.
        min_float: The score a masked position gets.
        quiet_softmax: Let a query attend to nothing (`quiet_softmax`).
        initializer: How the projections' parameters are drawn.
        device: Where the parameters are created.

    Attributes:
        query: The query projection, `[d_model, d_model]`.
        key: The key projection.
        value: The value projection.
        output: The output projection.
        dropout: Dropout on the scores.
        activation: Burn's unused GELU field (nil in the record).
        d_model: The model's width.
        n_heads: The number of heads.
        d_k: The width of a head, `d_model // n_heads`.
        min_float: The score a masked position gets.
        quiet_softmax: Whether the softmax is `quiet_softmax`.
    """

    __burn_fields__ = ("query", "key", "value", "output", "dropout", "activation", "d_model", "n_heads", "d_k",
                       "min_float", "quiet_softmax")

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.1, min_float: float = -1.0e4,
                 quiet_softmax: bool = False, initializer: Initializer = KAIMING_DEFAULT, *, device: Any = None) -> None:
        super().__init__()
        self.query, self.key, self.value, self.output = (
            Linear(d_model, d_model, True, initializer, device=device) for _ in range(4))
        self.dropout = Dropout(dropout)
        self.activation = Gelu()
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.min_float, self.quiet_softmax = min_float, quiet_softmax

    def forward(self, input: MhaInput) -> MhaOutput:
        """Attend.

        Args:
            input: The queries, keys and values, and their masks.

        Returns:
            The attention weights and the context `[B, L_q, d_model]`.
        """
        query = self._heads(self.query(input.query))
        key = self._heads(self.key(input.key))
        value = self._heads(self.value(input.value))
        return self._attend(query, key, value, input, self.output)

    def forward_cache(self, input: MhaInput, cache: MhaCache) -> MhaOutput:
        """Burn's `forward_cache`: each projection computed for the new position only (keys and values
        of a cross-attention cache once).

        Args:
            input: The sequence so far (for cross-attention: its queries, the whole memory as keys
                and values).
            cache: The cache from the previous positions, updated in place.
        """
        query = cache.query.forward_autoregressive(input.query, 2, lambda t: self._heads(self.query(t)))
        if cache.cross:
            key = cache.key.forward_full(input.key, lambda t: self._heads(self.key(t)))
            value = cache.value.forward_full(input.value, lambda t: self._heads(self.value(t)))
        else:
            key = cache.key.forward_autoregressive(input.key, 2, lambda t: self._heads(self.key(t)))
            value = cache.value.forward_autoregressive(input.value, 2, lambda t: self._heads(self.value(t)))
        return self._attend(query, key, value, input,
                            lambda t: cache.output.forward_autoregressive(t, 1, self.output))

    def _heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.n_heads, self.d_k).transpose(1, 2)

    def _attend(self, query: Tensor, key: Tensor, value: Tensor, input: MhaInput, output: Any) -> MhaOutput:
        scores = self.dropout(query @ key.transpose(-1, -2) / math.sqrt(self.d_k))
        if input.pad is not None:
            batch, length = input.pad.shape
            scores = scores.masked_fill(input.pad.reshape(batch, 1, 1, length), self.min_float)
        if input.attn is not None:
            batch, rows, cols = input.attn.shape
            scores = scores.masked_fill(input.attn.reshape(batch, 1, rows, cols), self.min_float)
        weights = quiet_softmax(scores, -1) if self.quiet_softmax else torch.softmax(scores, -1)
        batch, _, length, _ = weights.shape
        context = (weights @ value).transpose(1, 2).reshape(batch, length, self.d_model)
        return MhaOutput(weights, output(context))

    def extra_repr(self) -> str:
        return (f"d_model: {self.d_model}, n_heads: {self.n_heads}, d_k: {self.d_k}, dropout: {self.dropout.p}, "
                f"min_float: {self.min_float}, quiet_softmax: {self.quiet_softmax}")


@config
class MultiHeadAttentionConfig:
    """Burn's `MultiHeadAttentionConfig`: dropout 0.1, min_float -1e4, quiet_softmax false,
    initializer KaimingUniform(gain 1/√3)."""

    d_model: int  # the model's width, split over the heads
    n_heads: int  # the number of heads; divides d_model
    dropout: float = 0.1  # dropout probability on the scaled scores
    min_float: float = -1.0e4  # the score a masked position gets (Burn's, not -inf)
    quiet_softmax: bool = False  # let a query attend to nothing: exp(x_i) / (1 + Σ exp(x_j))
    initializer: Initializer = KAIMING_DEFAULT  # how the four projections' parameters are drawn

    def init(self, device: Any = None) -> MultiHeadAttention:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return MultiHeadAttention(self.d_model, self.n_heads, self.dropout, self.min_float, self.quiet_softmax,
                                  self.initializer, device=device)
