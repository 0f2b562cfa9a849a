"""`burnlike.autodiff`: Burn's lazy `Gradients` from `backward(loss)`; consumed once, as in Burn, so
gradients are never applied twice by mistake."""

import pytest
import torch
from torch import nn

from burnlike.autodiff import backward
from burnlike.optim import GradientsParams


def test_gradients_can_be_consumed_only_once():
    m = nn.Linear(2, 1)
    g = backward(m(torch.ones(1, 2)).sum())
    GradientsParams.from_grads(g, m)
    with pytest.raises(RuntimeError, match="consumed"):
        GradientsParams.from_grads(g, m)
