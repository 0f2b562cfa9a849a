"""Burn's transformer (burn-nn `modules/transformer/`): `PositionWiseFeedForwardConfig(d_model, d_ff)`,
`TransformerEncoderConfig(d_model, d_ff, n_heads, n_layers)` with `TransformerEncoderInput`,
`TransformerDecoderConfig(...)` with `TransformerDecoderInput`, and their autoregressive caches.

Burn's numbers, not `torch.nn.Transformer*`'s:
- the feed-forward activation is GELU (torch: ReLU), any `ActivationConfig`;
- attention is Burn's `MultiHeadAttention` (dropout on the scores, -1e4 masks, Burn's initializer);
- one dropout (`dropout`, 0.1) after each sub-layer, before the residual sum;
- `norm_first` false: `x = norm_1(x + attn(x))`, `x = norm_2(x + ffn(x))`; true: `x + attn(norm_2(x))`
  then `x + ffn(norm_1(x))` — Burn's norm order, which the record's `norm_1`/`norm_2` follow
  (the decoder: self-attention `norm_3`, cross-attention `norm_1`, feed-forward `norm_2` when
  norm-first; `norm_1`, `norm_2`, `norm_3` in that order otherwise);
- masks are `True` where masked: `mask_pad` `[B, L]`, `mask_attn` `[B, L, L]`.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from burnlike.config import config
from burnlike.module import Module
from burnlike.nn.activation import ActivationConfig
from burnlike.nn.attention import MhaCache, MhaInput, MultiHeadAttention
from burnlike.nn.cache import TensorCache
from burnlike.nn.dropout import Dropout
from burnlike.nn.initializer import KAIMING_DEFAULT, Initializer
from burnlike.nn.linear import Linear
from burnlike.nn.norm import LayerNorm
from burnlike.record.format.walker import Field
from burnlike.record.tensor.version import is_0_19


class PositionWiseFeedForward(Module):
    """Burn's `PositionWiseFeedForward`: linear_outer(dropout(activation(linear_inner(x)))). Its
    `activation` is skipped in Burn's record (`#[module(skip)]`, nil; 0.19 names it `gelu`).

    Args:
        d_model: Input and output features.
        d_ff: The hidden layer's features.
        dropout: Dropout probability after the activation.
        initializer: How both linear layers' parameters are drawn.
        activation: The hidden layer's activation.
        device: Where the parameters are created.

    Attributes:
        linear_inner: `d_model → d_ff`.
        linear_outer: `d_ff → d_model`.
        dropout: Dropout after the activation.
        activation: The activation module.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1, initializer: Initializer = KAIMING_DEFAULT,
                 activation: ActivationConfig = ActivationConfig.Gelu, *, device: Any = None) -> None:
        super().__init__()
        self.linear_inner = Linear(d_model, d_ff, True, initializer, device=device)
        self.linear_outer = Linear(d_ff, d_model, True, initializer, device=device)
        self.dropout = Dropout(dropout)
        self.activation = activation.init(device)

    def forward(self, input: Tensor) -> Tensor:
        """Apply it at every position.

        Args:
            input: `[..., d_model]`.

        Returns:
            The same shape.
        """
        out: Tensor = self.linear_outer(self.dropout(self.activation(self.linear_inner(input))))
        return out

    def burn_record_fields(self, version: str) -> list[Field]:
        return [Field("linear_inner", "module", self.linear_inner), Field("linear_outer", "module", self.linear_outer),
                Field("dropout", "nil"), Field("gelu" if is_0_19(version) else "activation", "nil")]


@config
class PositionWiseFeedForwardConfig:
    """Burn's `PositionWiseFeedForwardConfig`: dropout 0.1, KaimingUniform(gain 1/√3), activation Gelu."""

    d_model: int  # input and output features
    d_ff: int  # the hidden layer's features
    dropout: float = 0.1  # dropout probability after the activation
    initializer: Initializer = KAIMING_DEFAULT  # how both linear layers' parameters are drawn
    activation: ActivationConfig = ActivationConfig.Gelu  # the hidden layer's activation

    def init(self, device: Any = None) -> PositionWiseFeedForward:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return PositionWiseFeedForward(self.d_model, self.d_ff, self.dropout, self.initializer, self.activation,
                                       device=device)


class _Sublayers(Module):
    """What Burn's encoder and decoder layers share: attention config, norms, one dropout."""

    def _attention(self, cfg: _TransformerConfig, device: Any) -> MultiHeadAttention:
        return MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, quiet_softmax=cfg.quiet_softmax,
                                  initializer=cfg.initializer, device=device)

    @staticmethod
    def _cached(cache: TensorCache | None, x: Tensor, module: nn.Module) -> Tensor:
        out: Tensor = module(x) if cache is None else cache.forward_autoregressive(x, 1, module)
        return out


class TransformerEncoderLayer(_Sublayers):
    """Burn's `TransformerEncoderLayer` (record: mha, pwff, norm_1, norm_2, dropout, norm_first).

    Args:
        cfg: The encoder's config.
        device: Where the parameters are created.

    Attributes:
        mha: The self-attention.
        pwff: The feed-forward sub-layer.
        norm_1: The norm after (or, norm-first, before) the feed-forward sub-layer's input.
        norm_2: The other norm (see the module's docstring for Burn's order).
        dropout: Dropout after each sub-layer.
        norm_first: Whether the norms come before the sub-layers.
    """

    __burn_fields__ = ("mha", "pwff", "norm_1", "norm_2", "dropout", "norm_first")

    def __init__(self, cfg: TransformerEncoderConfig, device: Any = None) -> None:
        super().__init__()
        self.mha = self._attention(cfg, device)
        self.pwff = PositionWiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.initializer, cfg.activation,
                                            device=device)
        self.norm_1 = LayerNorm(cfg.d_model, cfg.layer_norm_eps, device=device)
        self.norm_2 = LayerNorm(cfg.d_model, cfg.layer_norm_eps, device=device)
        self.dropout = Dropout(cfg.dropout)
        self.norm_first = cfg.norm_first

    def forward(self, input: Tensor, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None,
                cache: TransformerEncoderLayerAutoregressiveCache | None = None) -> Tensor:
        """One layer.

        Args:
            input: `[B, L, d_model]`.
            mask_pad: Bool `[B, L]`, `True` at padded positions; None: no padding mask.
            mask_attn: Bool `[B, L, L]`, `True` where a position may not attend
                (`generate_autoregressive_mask`); None: none.
            cache: The layer's cache, for autoregressive inference; None: compute everything.

        Returns:
            `[B, L, d_model]`.
        """
        x = input
        residual = self._cached(cache.norm_2 if cache else None, x, self.norm_2) if self.norm_first else x
        attention = MhaInput.self_attn(residual).mask_pad(mask_pad).mask_attn(mask_attn)
        context = self.mha(attention).context if cache is None else self.mha.forward_cache(attention, cache.mha).context
        x = x + self.dropout(context)
        if self.norm_first:
            residual = self._cached(cache.norm_1 if cache else None, x, self.norm_1)
        else:
            x = residual = self._cached(cache.norm_1 if cache else None, x, self.norm_1)
        x = x + self.dropout(self._cached(cache.pwff if cache else None, residual, self.pwff))
        if not self.norm_first:
            x = self._cached(cache.norm_2 if cache else None, x, self.norm_2)
        return x


class TransformerEncoderLayerAutoregressiveCache:
    """What an encoder layer keeps between autoregressive steps: one cache per sub-layer.

    Attributes:
        mha: The self-attention's cache.
        pwff: The feed-forward's cache.
        norm_1: A norm's cache.
        norm_2: The other norm's cache.
    """

    def __init__(self) -> None:
        self.mha = MhaCache.autoregressive()
        self.pwff, self.norm_1, self.norm_2 = TensorCache(), TensorCache(), TensorCache()

    @classmethod
    def empty(cls) -> TransformerEncoderLayerAutoregressiveCache:
        """Burn's `empty()`: a new cache."""
        return cls()


class TransformerEncoderAutoregressiveCache:
    """One layer cache per encoder layer (`encoder.new_autoregressive_cache()`).

    Args:
        num_layers: The encoder's layers.
    """

    def __init__(self, num_layers: int) -> None:
        self.layers = [TransformerEncoderLayerAutoregressiveCache() for _ in range(num_layers)]
        """One cache per layer."""


class TransformerEncoderInput:
    """Burn's `TransformerEncoderInput::new(tensor [B, L, d_model]).mask_pad(..).mask_attn(..)`.

    Args:
        tensor: `[B, L, d_model]`.

    Attributes:
        tensor: The input.
        pad: The padding mask, or None.
        attn: The attention mask, or None.
    """

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor
        self.pad: Tensor | None = None
        self.attn: Tensor | None = None

    @classmethod
    def new(cls, tensor: Tensor) -> TransformerEncoderInput:
        """Burn's `TransformerEncoderInput::new(tensor)`.

        Args:
            tensor: `[B, L, d_model]`.
        """
        return cls(tensor)

    def mask_pad(self, mask_pad: Tensor | None) -> TransformerEncoderInput:
        """Set the padding mask; the input itself, for chaining.

        Args:
            mask_pad: Bool `[B, L]`, `True` at padded positions; None: no padding mask.
        """
        self.pad = mask_pad
        return self

    def mask_attn(self, mask_attn: Tensor | None) -> TransformerEncoderInput:
        """Set the attention mask; the input itself, for chaining.

        Args:
            mask_attn: Bool `[B, L, L]`, `True` where a position may not attend
                (`generate_autoregressive_mask`); None: none.
        """
        self.attn = mask_attn
        return self


class _Stack(Module):
    """Burn's encoder and decoder structs: the layers, then the config values (nil in the record)."""

    __burn_fields__ = ("layers", "d_model", "d_ff", "n_heads", "n_layers", "dropout", "norm_first", "quiet_softmax")

    def __init__(self, layer: type[nn.Module], cfg: _TransformerConfig, device: Any) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layer(cfg, device) for _ in range(cfg.n_layers))
        """The `n_layers` layers."""
        self.d_model, self.d_ff, self.n_heads, self.n_layers = cfg.d_model, cfg.d_ff, cfg.n_heads, cfg.n_layers
        self.dropout, self.norm_first, self.quiet_softmax = cfg.dropout, cfg.norm_first, cfg.quiet_softmax


class TransformerEncoder(_Stack):
    """Burn's `TransformerEncoder`: `forward(TransformerEncoderInput) -> [B, L, d_model]`;
    `forward_autoregressive_inference(input, cache)` recomputes only the last position's rows.

    Args:
        cfg: The encoder's config.
        device: Where the parameters are created.
    """

    def __init__(self, cfg: TransformerEncoderConfig, device: Any = None) -> None:
        super().__init__(TransformerEncoderLayer, cfg, device)

    def forward(self, input: TransformerEncoderInput) -> Tensor:
        """Encode.

        Args:
            input: The sequence and its masks.

        Returns:
            `[B, L, d_model]`.
        """
        x = input.tensor
        for layer in self.layers:
            x = layer(x, input.pad, input.attn)
        return x

    def forward_autoregressive_inference(self, input: TransformerEncoderInput,
                                         cache: TransformerEncoderAutoregressiveCache) -> Tensor:
        """Encode a sequence one position longer than at the last call, computing only the new
        position's rows.

        Args:
            input: The sequence so far and its masks (causal: `generate_autoregressive_mask`).
            cache: From `new_autoregressive_cache()`, updated in place.

        Returns:
            `[B, L, d_model]`.
        """
        x = input.tensor
        for layer, layer_cache in zip(self.layers, cache.layers):
            x = layer(x, input.pad, input.attn, layer_cache)
        return x

    def new_autoregressive_cache(self) -> TransformerEncoderAutoregressiveCache:
        """An empty cache for `forward_autoregressive_inference`."""
        return TransformerEncoderAutoregressiveCache(len(self.layers))


@config
class _TransformerConfig:
    """The fields Burn's encoder and decoder configs share, in their order."""

    d_model: int  # the model's width
    d_ff: int  # the feed-forward's hidden width
    n_heads: int  # attention heads; divides d_model
    n_layers: int  # the number of layers
    dropout: float = 0.1  # dropout after each sub-layer, and in attention and the feed-forward
    norm_first: bool = False  # layer norm before each sub-layer (pre-norm) instead of after
    quiet_softmax: bool = False  # the attention's `quiet_softmax`: a position may attend to nothing
    initializer: Initializer = KAIMING_DEFAULT  # how the linear layers' parameters are drawn
    activation: ActivationConfig = ActivationConfig.Gelu  # the feed-forward's activation
    layer_norm_eps: float = 1e-5  # the layer norms' epsilon


@config
class TransformerEncoderConfig(_TransformerConfig):
    """Burn's `TransformerEncoderConfig`: dropout 0.1, norm_first false, quiet_softmax false,
    KaimingUniform(gain 1/√3), activation Gelu (torch's encoder: ReLU), layer_norm_eps 1e-5."""

    def init(self, device: Any = None) -> TransformerEncoder:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return TransformerEncoder(self, device)


# --- decoder ---------------------------------------------------------------------------------------
class TransformerDecoderInput:
    """Burn's `TransformerDecoderInput::new(target, memory)` with `.target_mask_pad/.target_mask_attn/
    .memory_mask_pad/.memory_mask_attn`.

    Args:
        target: The decoder's sequence, `[B, L_t, d_model]`.
        memory: The encoder's output, `[B, L_m, d_model]`.

    Attributes:
        target: The decoder's sequence (a layer's output replaces it).
        memory: The encoder's output.
        target_pad: The target's padding mask, or None.
        target_attn: The target's attention mask, or None.
        memory_pad: The memory's padding mask, or None.
        memory_attn: The memory's attention mask, or None.
    """

    def __init__(self, target: Tensor, memory: Tensor) -> None:
        self.target, self.memory = target, memory
        self.target_pad: Tensor | None = None
        self.target_attn: Tensor | None = None
        self.memory_pad: Tensor | None = None
        self.memory_attn: Tensor | None = None

    @classmethod
    def new(cls, target: Tensor, memory: Tensor) -> TransformerDecoderInput:
        """Burn's `TransformerDecoderInput::new(target, memory)`.

        Args:
            target: The decoder's sequence, `[B, L_t, d_model]`.
            memory: The encoder's output, `[B, L_m, d_model]`.
        """
        return cls(target, memory)

    def target_mask_pad(self, mask: Tensor | None) -> TransformerDecoderInput:
        """Set the target's padding mask; the input itself, for chaining.

        Args:
            mask: Bool `[B, L_t]`, `True` at padded positions.
        """
        self.target_pad = mask
        return self

    def target_mask_attn(self, mask: Tensor | None) -> TransformerDecoderInput:
        """Set the target's self-attention mask; the input itself, for chaining.

        Args:
            mask: Bool `[B, L_t, L_t]`, `True` where a position may not attend (causal:
                `generate_autoregressive_mask`).
        """
        self.target_attn = mask
        return self

    def memory_mask_pad(self, mask: Tensor | None) -> TransformerDecoderInput:
        """Set the memory's padding mask; the input itself, for chaining.

        Args:
            mask: Bool `[B, L_m]`, `True` at padded memory positions.
        """
        self.memory_pad = mask
        return self

    def memory_mask_attn(self, mask: Tensor | None) -> TransformerDecoderInput:
        """Set the cross-attention mask; the input itself, for chaining.

        Args:
            mask: Bool `[B, L_t, L_m]`, `True` where a target position may not attend to a memory one.
        """
        self.memory_attn = mask
        return self


class TransformerDecoderLayerAutoregressiveCache:
    """What a decoder layer keeps between autoregressive steps: one cache per sub-layer.

    Attributes:
        cross_attn: The cross-attention's cache (keys and values computed once).
        self_attn: The self-attention's cache.
        pwff: The feed-forward's cache.
        norm_1: The first norm's cache.
        norm_2: The second norm's cache.
        norm_3: The third norm's cache.
    """

    def __init__(self) -> None:
        self.cross_attn = MhaCache.autoregressive_cross_attention()
        self.self_attn = MhaCache.autoregressive()
        self.pwff, self.norm_1, self.norm_2, self.norm_3 = TensorCache(), TensorCache(), TensorCache(), TensorCache()

    @classmethod
    def empty(cls) -> TransformerDecoderLayerAutoregressiveCache:
        """Burn's `empty()`: a new cache."""
        return cls()


class TransformerDecoderAutoregressiveCache:
    """One layer cache per decoder layer (`decoder.new_autoregressive_cache()`).

    Args:
        num_layers: The decoder's layers.
    """

    def __init__(self, num_layers: int) -> None:
        self.layers = [TransformerDecoderLayerAutoregressiveCache() for _ in range(num_layers)]
        """One cache per layer."""


class TransformerDecoderLayer(_Sublayers):
    """Burn's `TransformerDecoderLayer` (record: cross_attn, self_attn, pwff, norm_1, norm_2, norm_3,
    dropout, norm_first).

    Args:
        cfg: The decoder's config.
        device: Where the parameters are created.

    Attributes:
        cross_attn: The attention over the memory.
        self_attn: The self-attention.
        pwff: The feed-forward sub-layer.
        norm_1: A layer norm (see the module's docstring for Burn's order).
        norm_2: A layer norm.
        norm_3: A layer norm.
        dropout: Dropout after each sub-layer.
        norm_first: Whether the norms come before the sub-layers.
    """

    __burn_fields__ = ("cross_attn", "self_attn", "pwff", "norm_1", "norm_2", "norm_3", "dropout", "norm_first")

    def __init__(self, cfg: TransformerDecoderConfig, device: Any = None) -> None:
        super().__init__()
        self.cross_attn = self._attention(cfg, device)
        self.self_attn = self._attention(cfg, device)
        self.pwff = PositionWiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.initializer, cfg.activation,
                                            device=device)
        self.norm_1, self.norm_2, self.norm_3 = (LayerNorm(cfg.d_model, cfg.layer_norm_eps, device=device)
                                                 for _ in range(3))
        self.dropout = Dropout(cfg.dropout)
        self.norm_first = cfg.norm_first

    def forward(self, input: TransformerDecoderInput,
                cache: TransformerDecoderLayerAutoregressiveCache | None = None) -> TransformerDecoderInput:
        """One layer: its output replaces `input.target`.

        Args:
            input: The target, the memory and their masks.
            cache: The layer's cache, for autoregressive inference; None: compute everything.

        Returns:
            `input`, its target now the layer's output.
        """
        x = input.target
        residual = self._cached(cache.norm_3 if cache else None, x, self.norm_3) if self.norm_first else x
        attention = MhaInput.self_attn(residual).mask_pad(input.target_pad).mask_attn(input.target_attn)
        context = (self.self_attn(attention) if cache is None
                   else self.self_attn.forward_cache(attention, cache.self_attn)).context
        x = x + self.dropout(context)
        if self.norm_first:
            residual = self._cached(cache.norm_1 if cache else None, x, self.norm_1)
        else:
            x = residual = self._cached(cache.norm_1 if cache else None, x, self.norm_1)
        cross = MhaInput(residual, input.memory, input.memory).mask_pad(input.memory_pad).mask_attn(input.memory_attn)
        context = (self.cross_attn(cross) if cache is None
                   else self.cross_attn.forward_cache(cross, cache.cross_attn)).context
        x = x + self.dropout(context)
        if self.norm_first:
            residual = self._cached(cache.norm_2 if cache else None, x, self.norm_2)
        else:
            x = residual = self._cached(cache.norm_2 if cache else None, x, self.norm_2)
        x = x + self.dropout(self._cached(cache.pwff if cache else None, residual, self.pwff))
        if not self.norm_first:
            x = self._cached(cache.norm_3 if cache else None, x, self.norm_3)
        input.target = x
        return input


class TransformerDecoder(_Stack):
    """Burn's `TransformerDecoder`: `forward(TransformerDecoderInput) -> [B, L, d_model]`.

    Args:
        cfg: The decoder's config.
        device: Where the parameters are created.
    """

    def __init__(self, cfg: TransformerDecoderConfig, device: Any = None) -> None:
        super().__init__(TransformerDecoderLayer, cfg, device)

    def forward(self, input: TransformerDecoderInput) -> Tensor:
        """Decode.

        Args:
            input: The target, the memory and their masks.

        Returns:
            `[B, L_t, d_model]`.
        """
        for layer in self.layers:
            input = layer(input)
        return input.target

    def forward_autoregressive_inference(self, input: TransformerDecoderInput,
                                         cache: TransformerDecoderAutoregressiveCache) -> Tensor:
        """Decode a target one position longer than at the last call, computing only the new
        position's rows (the memory's keys and values once).

        Args:
            input: The target so far, the memory and their masks.
            cache: From `new_autoregressive_cache()`, updated in place.

        Returns:
            `[B, L_t, d_model]`.
        """
        for layer, layer_cache in zip(self.layers, cache.layers):
            input = layer(input, layer_cache)
        return input.target

    def new_autoregressive_cache(self) -> TransformerDecoderAutoregressiveCache:
        """An empty cache for `forward_autoregressive_inference`."""
        return TransformerDecoderAutoregressiveCache(len(self.layers))


@config
class TransformerDecoderConfig(_TransformerConfig):
    """Burn's `TransformerDecoderConfig`: the encoder's defaults."""

    def init(self, device: Any = None) -> TransformerDecoder:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return TransformerDecoder(self, device)
