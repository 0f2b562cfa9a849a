"""`burnlike.nn.embedding`: Burn's `Embedding` (burn-nn `modules/embedding.rs`, v0.21.0)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from burnlike.nn import EmbeddingConfig, Initializer
from tests.nn.helpers import burn_file, layout, param, saved_item


def test_defaults_and_lookup():
    """Normal(0, 1) by default (`initializer_zeros` checks the Zeros override); `forward` picks rows."""
    config = EmbeddingConfig(100, 10)
    assert config.initializer == Initializer.Normal(mean=0.0, std=1.0)
    torch.manual_seed(0)
    embed = EmbeddingConfig(1000, 100).init()
    var, mean = torch.var_mean(embed.weight)
    assert abs(var.item() - 1.0) < 0.02 and abs(mean.item()) < 0.01
    assert isinstance(embed, nn.Embedding)
    assert EmbeddingConfig(5, 5).with_initializer(Initializer.Zeros).init().weight.abs().sum() == 0
    ids = torch.tensor([[1, 0], [2, 2]])
    assert torch.equal(embed(ids), embed.weight[ids])


def test_record_is_the_weight_as_is(tmp_path):
    assert layout(saved_item(EmbeddingConfig(4, 3).init(), tmp_path)) == {"weight": (4, 3)}
    weight = np.arange(12, dtype=np.float32).reshape(4, 3)
    embed = EmbeddingConfig(4, 3).init().load_file(burn_file(tmp_path / "e.mpk", {"weight": param(weight)}))
    assert embed(torch.tensor([[3]])).tolist() == [[[9.0, 10.0, 11.0]]]
