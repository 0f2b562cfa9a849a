"""TODO: docstring."""

import torch

import burnlike


def test_seed_is_reproducible():
    burnlike.seed(7)
    a = torch.rand(3)
    burnlike.seed(7)
    assert torch.equal(a, torch.rand(3))
