"""A GPT language model (a decoder-only transformer), as nanoGPT's `model.py` builds it.

Token and position embeddings, `n_layer` pre-norm blocks (causal self-attention through
`F.scaled_dot_product_attention`, then a 4x MLP with GELU), a final LayerNorm and an output
projection that shares the token embedding's weight. Initialised as GPT-2 is: normal(0, 0.02), the
residual projections scaled by 1/sqrt(2 * n_layer), biases zero. `GptConfig`'s defaults are
nanoGPT's CPU shakespeare_char model (4 layers, 4 heads, 128 wide, 64 tokens of context).

Burn's traits: `train_step`/`valid_step` on a `TokenWindowBatch`, returning a `SequenceOutput`
(loss, logits, targets); `generate(...)` samples text from a prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from burnlike.checks import positive_int
from burnlike.config import config
from burnlike.data.text import TokenWindowBatch
from burnlike.module import Module
from burnlike.nn import CrossEntropyLossConfig
from burnlike.train.output import SequenceOutput
from burnlike.train.step import TrainOutput, TrainStep, ValidStep, backward

__all__ = ["Gpt", "GptConfig"]


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.dropout = dropout
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        q, k, v = (part.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
                   for part in self.qkv(x).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        out: Tensor = self.resid_dropout(self.proj(y.transpose(1, 2).reshape(b, t, c)))
        return out


class Mlp(nn.Module):
    def __init__(self, n_embd: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.dropout(self.proj(F.gelu(self.fc(x))))
        return out


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float, bias: bool) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, bias=bias)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout, bias)
        self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
        self.mlp = Mlp(n_embd, dropout, bias)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        out: Tensor = x + self.mlp(self.ln_2(x))
        return out


class Gpt(Module, TrainStep[TokenWindowBatch, SequenceOutput], ValidStep[TokenWindowBatch, SequenceOutput]):
    """nanoGPT's GPT: predicts each next token of a window. Build it with `GptConfig(...).init(device)`.

    Args:
        config: The sizes (`GptConfig`).

    Attributes:
        block_size: The longest context, in tokens.
        token_embedding: Token ids → vectors; its weight is also `lm_head`'s (weight tying).
        position_embedding: Positions `0..block_size-1` → vectors.
        dropout: Dropout on the summed embeddings.
        blocks: The `n_layer` transformer blocks.
        ln_f: The LayerNorm before the output projection.
        lm_head: Vectors → logits over the vocabulary.
        loss: Cross-entropy over every position.
    """

    def __init__(self, config: GptConfig) -> None:
        super().__init__()
        c = config
        self.block_size = c.block_size
        self.token_embedding = nn.Embedding(c.vocab_size, c.n_embd)
        self.position_embedding = nn.Embedding(c.block_size, c.n_embd)
        self.dropout = nn.Dropout(c.dropout)
        blocks = [Block(c.n_embd, c.n_head, c.dropout, c.bias) for _ in range(c.n_layer)]
        self.blocks = nn.ModuleList(blocks)
        self.ln_f = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight  # weight tying (one parameter)
        self.loss = CrossEntropyLossConfig().init()
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for block in blocks:  # the residual projections: GPT-2's scaled init
            for proj in (block.attn.proj, block.mlp.proj):
                nn.init.normal_(proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * c.n_layer))

    def forward(self, tokens: Tensor) -> Tensor:
        """Logits `[B, T, vocab]` for tokens `[B, T]` (T at most `block_size`).

        Args:
            tokens: Token ids, int64 `[B, T]`.

        Raises:
            ValueError: The sequence is longer than `block_size`.
        """
        t = tokens.shape[1]
        if t > self.block_size:
            raise ValueError(f"Gpt: a sequence of {t} tokens is longer than the block size {self.block_size}")
        positions = torch.arange(t, device=tokens.device)
        x = self.dropout(self.token_embedding(tokens) + self.position_embedding(positions))
        for block in self.blocks:
            x = block(x)
        logits: Tensor = self.lm_head(self.ln_f(x))
        return logits

    def forward_lm(self, inputs: Tensor, targets: Tensor) -> SequenceOutput:
        """The logits and their cross-entropy against the next tokens, for the metrics.

        Args:
            inputs: Token ids `[B, T]`.
            targets: The next token of each position, `[B, T]`.
        """
        logits = self.forward(inputs)
        loss = self.loss(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return SequenceOutput(loss, logits, None, targets)

    def train_step(self, batch: TokenWindowBatch) -> TrainOutput[SequenceOutput]:
        item = self.forward_lm(batch.inputs, batch.targets)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: TokenWindowBatch) -> SequenceOutput:
        return self.forward_lm(batch.inputs, batch.targets)

    @torch.no_grad()
    def generate(self, prompt: Tensor | Sequence[int], max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, generator: torch.Generator | None = None) -> Tensor:
        """`prompt` (token ids `[T]` or `[B, T]`) followed by `max_new_tokens` sampled tokens, each
        from the softmax of the last position's logits / `temperature`, among the `top_k` likeliest
        (all when None); the context is the last `block_size` tokens. Runs in eval mode (dropout off)
        and puts the model's mode back.

        Args:
            prompt: Token ids `[T]` or `[B, T]`, at least one.
            max_new_tokens: How many tokens to sample.
            temperature: Divides the logits: below 1 sharper, above 1 flatter (> 0).
            top_k: Sample among the `top_k` likeliest tokens only (None: all).
            generator: The random source for sampling (None: torch's global one).

        Returns:
            The prompt followed by the new tokens, with the prompt's shape (`[T + n]` or `[B, T + n]`).

        Raises:
            ValueError: `temperature` <= 0, or an empty prompt.
        """
        if temperature <= 0:
            raise ValueError(f"Gpt.generate: temperature must be > 0, got {temperature}")
        device = self.token_embedding.weight.device
        tokens = torch.as_tensor(prompt, dtype=torch.int64, device=device)
        single = tokens.dim() == 1
        tokens = tokens.unsqueeze(0) if single else tokens
        if tokens.shape[1] == 0:
            raise ValueError("Gpt.generate: the prompt needs at least one token")
        was_training = self.training
        self.eval()
        try:
            for _ in range(max_new_tokens):
                logits = self.forward(tokens[:, -self.block_size:])[:, -1, :] / temperature
                if top_k is not None:
                    kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                probs = F.softmax(logits, dim=-1)
                tokens = torch.cat([tokens, torch.multinomial(probs, 1, generator=generator)], dim=1)
        finally:
            self.train(was_training)
        return tokens[0] if single else tokens


@config
class GptConfig:
    """`vocab_size`: the tokenizer's; `block_size`: the longest context; `bias`: biases in the
    Linears and LayerNorms (nanoGPT: False is a bit better and faster)."""

    vocab_size: int  # token ids the model reads and predicts: the tokenizer's vocabulary
    block_size: int = 64  # the longest context, in tokens (the position embedding's size)
    n_layer: int = 4  # transformer blocks
    n_head: int = 4  # attention heads per block (n_embd must be a multiple)
    n_embd: int = 128  # the width: embedding and residual stream size
    dropout: float = 0.0  # on the embeddings, attention weights and residual branches while training
    bias: bool = False  # biases in the Linears and LayerNorms

    def init(self, device: Any = None) -> Gpt:
        """The model, initialised as GPT-2 is, after checking the sizes.

        Args:
            device: Where the parameters are created (`"cpu"` when None).

        Raises:
            ValueError: A size below 1, `n_embd` not a multiple of `n_head`, or `dropout` outside [0, 1).
        """
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            positive_int(getattr(self, name), f"GptConfig.{name}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GptConfig: n_embd={self.n_embd} must be a multiple of n_head={self.n_head}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GptConfig.dropout must be in [0, 1), got {self.dropout}")
        return Gpt(self).to(device or "cpu")
