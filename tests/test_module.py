"""`burnlike.module`: `Module`, Burn's module API on a `torch.nn.Module` (parameter count, `valid()`
as a frozen inference copy, as Burn's is, and the devices it lives on)."""

import torch
from torch import nn

from burnlike.module import Module


def test_module_counts_params_valid_is_a_frozen_copy_and_lists_devices():
    class Net(Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.drop = nn.Dropout(0.5)

    net = Net()
    assert net.num_params() == 8
    inference = net.valid()
    assert inference is not net and not inference.training and net.training  # Burn's valid() is a copy
    assert not any(p.requires_grad for p in inference.parameters())
    assert all(p.requires_grad for p in net.parameters())
    assert net.devices() == [torch.device("cpu")]
