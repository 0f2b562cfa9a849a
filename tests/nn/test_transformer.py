"""`burnlike.nn.transformer`: Burn's transformer (burn-nn `modules/transformer/`, v0.21.0). Its
formula is checked against torch's own layers fed the same weights — with GELU (Burn's default;
torch's is ReLU) and Burn's norm order — plus Burn's autoregressive-cache tests, defaults and records."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from burnlike.nn import (
    ActivationConfig,
    LayerNorm,
    PositionWiseFeedForwardConfig,
    TransformerDecoderConfig,
    TransformerDecoderInput,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    generate_autoregressive_mask,
)
from tests.nn.helpers import layout, saved_item


def copy_attention(torch_mha: nn.MultiheadAttention, mha) -> None:
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([mha.query.weight, mha.key.weight, mha.value.weight]))
        torch_mha.in_proj_bias.copy_(torch.cat([mha.query.bias, mha.key.bias, mha.value.bias]))
        torch_mha.out_proj.weight.copy_(mha.output.weight)
        torch_mha.out_proj.bias.copy_(mha.output.bias)


def copy_norm(torch_norm: nn.LayerNorm, norm: LayerNorm) -> None:
    torch_norm.load_state_dict(norm.state_dict())


def torch_encoder_layer(layer, norm_first: bool, activation: str = "gelu") -> nn.TransformerEncoderLayer:
    """torch's layer with Burn's weights; Burn's norm-first order applies `norm_2` before attention."""
    d_model, d_ff = layer.pwff.linear_inner.in_features, layer.pwff.linear_inner.out_features
    ref = nn.TransformerEncoderLayer(d_model, layer.mha.n_heads, d_ff, dropout=0.0, activation=activation,
                                     batch_first=True, norm_first=norm_first).eval()
    copy_attention(ref.self_attn, layer.mha)
    ref.linear1.load_state_dict(layer.pwff.linear_inner.state_dict())
    ref.linear2.load_state_dict(layer.pwff.linear_outer.state_dict())
    first, second = (layer.norm_2, layer.norm_1) if norm_first else (layer.norm_1, layer.norm_2)
    copy_norm(ref.norm1, first)
    copy_norm(ref.norm2, second)
    return ref


def test_encoder_defaults_are_burns():
    """Dropout 0.1, post-norm, no quiet softmax, GELU, layer-norm epsilon 1e-5."""
    config = TransformerEncoderConfig(8, 16, 2, 1)
    assert (config.dropout, config.norm_first, config.quiet_softmax, config.layer_norm_eps) == (0.1, False, False, 1e-5)
    assert config.activation == ActivationConfig.Gelu == TransformerDecoderConfig(8, 16, 2, 1).activation
    assert PositionWiseFeedForwardConfig(8, 16).activation == ActivationConfig.Gelu


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_is_burns_formula_with_gelu(norm_first):
    """encoder.rs `TransformerEncoderLayer::forward`: torch's layer with GELU and Burn's weights (and
    Burn's norm order) gives the same numbers, causal mask included; torch's default ReLU does not."""
    torch.manual_seed(0)
    encoder = TransformerEncoderConfig(8, 16, 2, 1, norm_first=norm_first).init().eval()
    x = torch.randn(2, 5, 8)
    mask = generate_autoregressive_mask(2, 5)
    out = encoder(TransformerEncoderInput(x).mask_attn(mask))
    ref = torch_encoder_layer(encoder.layers[0], norm_first)
    expected = ref(x, src_mask=nn.Transformer.generate_square_subsequent_mask(5), is_causal=True)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)
    relu = torch_encoder_layer(encoder.layers[0], norm_first, "relu")
    assert not torch.allclose(relu(x, src_mask=nn.Transformer.generate_square_subsequent_mask(5)), out, atol=1e-3)


def test_one_dropout_after_each_sublayer_before_the_residual_sum():
    """encoder.rs: `x + dropout(mha(..))`, `x + dropout(pwff(..))`. With every value dropped only the
    residual path and the norms remain: post-norm gives norm_2(norm_1(x)), norm-first gives x."""
    x = torch.randn(2, 3, 8)
    post = TransformerEncoderConfig(8, 16, 2, 1, dropout=1.0).init().train()
    layer = post.layers[0]
    torch.testing.assert_close(post(TransformerEncoderInput(x)), layer.norm_2(layer.norm_1(x)))
    first = TransformerEncoderConfig(8, 16, 2, 1, dropout=1.0, norm_first=True).init().train()
    torch.testing.assert_close(first(TransformerEncoderInput(x)), x)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_autoregressive_cache_matches_the_masked_forward(norm_first):
    """encoder.rs `test_autoregressive_norm_last` / `test_autoregressive_norm_first`."""
    torch.manual_seed(0)
    encoder = TransformerEncoderConfig(12, 24, 2, 3, norm_first=norm_first).init().eval()
    x = torch.randn(3, 4, 12)
    full = encoder(TransformerEncoderInput(x).mask_attn(generate_autoregressive_mask(3, 4)))
    cache = encoder.new_autoregressive_cache()
    steps = [encoder.forward_autoregressive_inference(
        TransformerEncoderInput(x[:, :i]).mask_attn(generate_autoregressive_mask(3, i)), cache)[:, i - 1:i]
        for i in range(1, 5)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_is_burns_formula(norm_first):
    """decoder.rs `TransformerDecoderLayer::forward` against torch's decoder layer (GELU); Burn's
    norm-first order normalises with norm_3, norm_1, norm_2; the cache matches the masked forward."""
    torch.manual_seed(0)
    decoder = TransformerDecoderConfig(8, 16, 2, 1, norm_first=norm_first).init().eval()
    target, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
    mask = generate_autoregressive_mask(2, 4)
    out = decoder(TransformerDecoderInput(target, memory).target_mask_attn(mask))
    layer = decoder.layers[0]
    ref = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True,
                                     norm_first=norm_first).eval()
    copy_attention(ref.self_attn, layer.self_attn)
    copy_attention(ref.multihead_attn, layer.cross_attn)
    ref.linear1.load_state_dict(layer.pwff.linear_inner.state_dict())
    ref.linear2.load_state_dict(layer.pwff.linear_outer.state_dict())
    norms = (layer.norm_3, layer.norm_1, layer.norm_2) if norm_first else (layer.norm_1, layer.norm_2, layer.norm_3)
    for torch_norm, norm in zip((ref.norm1, ref.norm2, ref.norm3), norms):
        copy_norm(torch_norm, norm)
    expected = ref(target, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), tgt_is_causal=True)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)
    cache = decoder.new_autoregressive_cache()
    steps = [decoder.forward_autoregressive_inference(
        TransformerDecoderInput(target[:, :i], memory).target_mask_attn(generate_autoregressive_mask(2, i)),
        cache)[:, i - 1:i] for i in range(1, 5)]
    torch.testing.assert_close(torch.cat(steps, 1), out, atol=1e-4, rtol=1e-3)


def test_encoder_and_decoder_records_are_burns_structs(tmp_path):
    encoder = layout(saved_item(TransformerEncoderConfig(4, 8, 2, 2).init(), tmp_path))
    assert list(encoder) == ["layers", "d_model", "d_ff", "n_heads", "n_layers", "dropout", "norm_first",
                             "quiet_softmax"]
    assert len(encoder["layers"]) == 2
    layer = encoder["layers"][0]
    assert list(layer) == ["mha", "pwff", "norm_1", "norm_2", "dropout", "norm_first"]
    assert layer["pwff"] == {"linear_inner": {"weight": (4, 8), "bias": (8,)},
                             "linear_outer": {"weight": (8, 4), "bias": (4,)}, "dropout": None, "activation": None}
    decoder = layout(saved_item(TransformerDecoderConfig(4, 8, 2, 1).init(), tmp_path))
    assert list(decoder["layers"][0]) == ["cross_attn", "self_attn", "pwff", "norm_1", "norm_2", "norm_3", "dropout",
                                          "norm_first"]
    from burnlike.record.format.module_record import module_to_record

    assert "gelu" in module_to_record(PositionWiseFeedForwardConfig(4, 8).init(), version="0.19.0")
