"""`burnlike.nn`'s names: Burn's `burn::nn` paths (`nn::conv`, `nn::pool`, `nn::attention`,
`nn::transformer`, `nn::loss`) and every name at the top as well."""

from __future__ import annotations

import importlib

import torch

import burnlike.nn


def test_burns_submodule_paths_hold_their_names():
    for path, names in {
        "conv": ["Conv1dConfig", "Conv2dConfig", "Conv3dConfig", "ConvTranspose1dConfig", "ConvTranspose2dConfig"],
        "pool": ["MaxPool2dConfig", "AvgPool2dConfig", "AdaptiveAvgPool2dConfig", "MaxPool1dConfig"],
        "attention": ["MultiHeadAttentionConfig", "MhaInput", "generate_autoregressive_mask", "generate_padding_mask"],
        "transformer": ["TransformerEncoderConfig", "TransformerEncoderInput", "TransformerDecoderConfig",
                        "PositionWiseFeedForwardConfig"],
        "loss": ["CrossEntropyLossConfig", "MseLoss"],
        "interpolate": ["Interpolate2dConfig", "InterpolateMode"],
    }.items():
        module = importlib.import_module(f"burnlike.nn.{path}")
        for name in names:
            assert getattr(module, name) is getattr(burnlike.nn, name), f"burnlike.nn.{path}.{name}"


def test_every_config_builds_a_torch_module():
    """Each exported `...Config` whose fields all have defaults, or takes sizes, builds a real
    `torch.nn.Module` on the device asked for."""
    from burnlike.nn import BatchNormConfig, CrossEntropyLossConfig, LinearConfig, LstmConfig

    for module in (LinearConfig(2, 3).init("cpu"), BatchNormConfig(3).init("cpu"), LstmConfig(2, 3, True).init("meta")):
        assert isinstance(module, torch.nn.Module)
    assert LstmConfig(2, 3, True).init("meta").input_gate.input_transform.weight.device.type == "meta"
    assert isinstance(CrossEntropyLossConfig().init(), torch.nn.Module)
    assert set(burnlike.nn.__all__) <= set(dir(burnlike.nn))
