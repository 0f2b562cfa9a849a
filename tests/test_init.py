"""`burnlike` (the package's `__init__`): `burnlike.seed` makes a run reproducible."""

import torch

import burnlike


def test_seed_is_reproducible():
    burnlike.seed(7)
    a = torch.rand(3)
    burnlike.seed(7)
    assert torch.equal(a, torch.rand(3))
