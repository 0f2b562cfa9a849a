"""`burnlike.nn.attention`: Burn's multi-head attention and masks (burn-nn `modules/attention/`,
v0.21.0): the masks its unit tests expect, Burn's attention formula (dropout on the scores, -1e4
masks, quiet softmax), its defaults, and its record."""

from __future__ import annotations

import math

import torch

import burnlike.data
from burnlike.nn import (
    Initializer,
    MhaCache,
    MhaInput,
    MultiHeadAttentionConfig,
    SeqLengthOption,
    generate_autoregressive_mask,
    generate_padding_mask,
)
from tests.nn.helpers import layout, saved_item


def test_autoregressive_mask_hides_the_future():
    """mask.rs `test_generate_autoregressive_mask` (batch 2, length 3)."""
    row = [[False, True, True], [False, False, True], [False, False, False]]
    assert generate_autoregressive_mask(2, 3).tolist() == [row, row]


def test_padding_mask_marks_the_pad_tokens():
    """mask.rs `test_generate_padding_mask`; the same function is `burnlike.data`'s."""
    tokens = [[3, 3, 3], [3, 3, 3], [3, 3, 3, 4], [3, 3, 3, 4, 10, 15]]
    mask = generate_padding_mask(0, tokens, None).mask
    assert mask.tolist() == [[False, False, False, True, True, True], [False, False, False, True, True, True],
                             [False, False, False, False, True, True], [False] * 6]
    assert burnlike.data.generate_padding_mask is generate_padding_mask
    assert generate_padding_mask(0, tokens, SeqLengthOption.Fixed(2)).tensor.tolist() == [[3, 3]] * 4


def test_defaults_are_burns():
    config = MultiHeadAttentionConfig(8, 2)
    assert (config.dropout, config.min_float, config.quiet_softmax) == (0.1, -1.0e4, False)
    assert config.initializer == Initializer.KaimingUniform(gain=1 / math.sqrt(3), fan_out_only=False)
    mha = config.init()
    assert mha.d_k == 4 and mha.query.bias is not None


def reference(mha, q, k, v, mask=None):
    """Burn's `MultiHeadAttention::forward` written out (mha.rs): per head softmax(QKᵀ/√d_k, masked
    with min_float)·V, heads concatenated, then the output projection."""
    heads, d_k = mha.n_heads, mha.d_k

    def project(x, linear):
        y = x @ linear.weight.T + linear.bias
        return y.reshape(x.shape[0], x.shape[1], heads, d_k).transpose(1, 2)

    scores = project(q, mha.query) @ project(k, mha.key).transpose(-1, -2) / math.sqrt(d_k)
    if mask is not None:
        scores = torch.where(mask[:, None], torch.tensor(mha.min_float), scores)
    weights = torch.exp(scores - scores.amax(-1, keepdim=True))
    weights = weights / weights.sum(-1, keepdim=True)
    context = (weights @ project(v, mha.value)).transpose(1, 2).reshape(q.shape[0], q.shape[1], -1)
    return weights, context @ mha.output.weight.T + mha.output.bias


def test_forward_is_burns_formula():
    """`test_generic_mha_shapes`; the context and weights of Burn's formula, with a causal mask."""
    torch.manual_seed(0)
    mha = MultiHeadAttentionConfig(8, 2).init().eval()
    q, kv = torch.randn(3, 4, 8), torch.randn(3, 5, 8)
    out = mha(MhaInput(q, kv, kv))
    assert out.context.shape == (3, 4, 8) and out.weights.shape == (3, 2, 4, 5)
    weights, context = reference(mha, q, kv, kv)
    torch.testing.assert_close(out.weights, weights)
    torch.testing.assert_close(out.context, context)
    mask = generate_autoregressive_mask(3, 4)
    masked = mha(MhaInput.self_attn(q).mask_attn(mask))
    torch.testing.assert_close(masked.context, reference(mha, q, q, q, mask)[1])
    assert masked.weights[:, :, 0, 1:].max() < 1e-30


def test_masks_fill_min_float_so_a_fully_masked_row_stays_finite():
    """Burn masks with `min_float` (-1e4), not -inf: a row whose keys are all padding averages them
    evenly (torch's -inf gives NaN); `quiet_softmax` lets such a row attend to nothing."""
    mha = MultiHeadAttentionConfig(4, 1).init().eval()
    x = torch.randn(1, 3, 4)
    pad = torch.ones(1, 3, dtype=torch.bool)
    out = mha(MhaInput.self_attn(x).mask_pad(pad))
    torch.testing.assert_close(out.weights, torch.full((1, 1, 3, 3), 1 / 3))
    quiet = MultiHeadAttentionConfig(4, 1, quiet_softmax=True).init().eval()
    assert quiet(MhaInput.self_attn(x).mask_pad(pad)).weights.abs().max() == 0
    unmasked = quiet(MhaInput.self_attn(x)).weights
    assert (unmasked.sum(-1) < 1).all()  # quiet softmax: exp(x_i) / (1 + Σ exp(x_j))


def test_dropout_acts_on_the_scores_before_the_softmax():
    """mha.rs `attn_scores`: dropout on QKᵀ/√d_k. With every score dropped the softmax is uniform
    (torch's attention drops weights after it: they would be zero)."""
    mha = MultiHeadAttentionConfig(4, 2, dropout=1.0).init().train()
    out = mha(MhaInput.self_attn(torch.randn(2, 5, 4)))
    torch.testing.assert_close(out.weights, torch.full((2, 2, 5, 5), 0.2))


def test_cached_decoding_matches_the_masked_forward():
    """`test_autoregressive_mask_should_have_same_output_as_autoregressive_decoding`."""
    torch.manual_seed(0)
    mha = MultiHeadAttentionConfig(12, 2).init().eval()
    x = torch.randn(3, 4, 12)
    full = mha(MhaInput.self_attn(x).mask_attn(generate_autoregressive_mask(3, 4))).context
    cache = MhaCache.autoregressive()
    steps = [mha.forward_cache(MhaInput.self_attn(x[:, :i]), cache).context[:, i - 1:i] for i in range(1, 5)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-4)


def test_record(tmp_path):
    """MultiHeadAttention {query, key, value, output, dropout, activation, d_model, n_heads, d_k,
    min_float, quiet_softmax}: four Linear records, then nil."""
    item = layout(saved_item(MultiHeadAttentionConfig(4, 2).init(), tmp_path))
    assert list(item) == ["query", "key", "value", "output", "dropout", "activation", "d_model", "n_heads", "d_k",
                          "min_float", "quiet_softmax"]
    assert item["query"] == {"weight": (4, 4), "bias": (4,)} and item["quiet_softmax"] is None
