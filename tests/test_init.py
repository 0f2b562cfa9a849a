"""`burnlike` (the package's `__init__`): `burnlike.seed` makes a run reproducible."""

import pytest
import torch

import burnlike


def test_seed_is_reproducible():
    burnlike.seed(7)
    a = torch.rand(3)
    burnlike.seed(7)
    assert torch.equal(a, torch.rand(3))


def test_seed_takes_burn_021s_device_and_seed():
    """Burn 0.21: `B::seed(&device, seed)` (examples/mnist/src/training.rs); the seed(seed) spelling stays."""
    burnlike.seed("cpu", 7)
    a = torch.rand(3)
    burnlike.seed(torch.device("cpu"), 7)
    b = torch.rand(3)
    burnlike.seed(7)
    assert torch.equal(a, b) and torch.equal(a, torch.rand(3))
    burnlike.seed(seed=7)
    assert torch.equal(a, torch.rand(3))


def test_seed_names_what_it_expected():
    with pytest.raises(TypeError, match=r"^seed expects an int seed: seed\(42\) or seed\(device, 42\), got 'cpu'$"):
        burnlike.seed("cpu")
    with pytest.raises(ValueError, match=r"^seed\(device, seed\): 'gpu:0' is not a device"):
        burnlike.seed("gpu:0", 1)
    with pytest.raises(TypeError, match="device must be"):
        burnlike.seed(1.5, 1)
