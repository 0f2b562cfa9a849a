"""`burnlike.optim.grads`: GradientsParams, a backward pass's gradients keyed by parameter (only the
module's, only those that reach the loss), and GradientsAccumulator, which sums them per parameter
across steps and empties on `grads()`, as Burn's do."""

import torch
from torch import nn

from burnlike.autodiff import backward
from burnlike.optim import GradientsAccumulator, GradientsParams


def test_gradients_params_map_by_parameter():
    m = nn.Linear(2, 1)
    grads = GradientsParams.from_grads(backward((m(torch.ones(1, 2)) * 3).sum()), m)
    assert len(grads) == 2 and m.weight in grads and m.bias in grads
    assert torch.equal(grads.get(m.weight), torch.full((1, 2), 3.0))
    removed = grads.remove(m.bias)
    assert torch.equal(removed, torch.full((1,), 3.0))
    assert m.bias not in grads and len(grads) == 1 and grads.get(m.bias) is None
    assert grads.remove(m.bias) is None  # removing twice is not an error, as Burn's
    grads.register(m.bias, torch.ones(1))
    assert [p is m.bias for p, _ in grads.items()] == [False, True]


def test_gradients_from_params_keeps_only_the_modules_chosen_parameters():
    m, other = nn.Linear(2, 1), nn.Linear(2, 1)
    loss = (m(torch.ones(1, 2)) + other(torch.ones(1, 2))).sum()
    grads = GradientsParams.from_params(backward(loss), m, [m.weight, other.weight])
    assert len(grads) == 1 and m.weight in grads and other.weight not in grads
    assert torch.equal(grads.get(m.weight), torch.ones(1, 2))


def test_gradients_skip_parameters_that_do_not_reach_the_loss():
    m = nn.Linear(2, 1)
    frozen = nn.Linear(2, 1)
    frozen.weight.requires_grad_(False)
    model = nn.ModuleDict({"used": m, "frozen": frozen})
    grads = GradientsParams.from_grads(backward(m(torch.ones(1, 2)).sum()), model)
    assert len(grads) == 2 and frozen.bias not in grads and frozen.weight not in grads


def test_accumulator_sums_and_pops():
    m = nn.Linear(2, 1)
    acc = GradientsAccumulator()
    for _ in range(3):
        acc.accumulate(m, GradientsParams.from_grads(backward(m(torch.ones(1, 2)).sum()), m))
    total = acc.grads()
    assert torch.allclose(total.get(m.weight), torch.full((1, 2), 3.0))
    assert len(acc.grads()) == 0


def test_accumulator_adds_gradients_of_different_parameters_separately():
    m = nn.Linear(2, 1)
    acc = GradientsAccumulator()
    acc.accumulate(m, GradientsParams({m.weight: torch.ones(1, 2)}))
    acc.accumulate(m, GradientsParams({m.weight: torch.full((1, 2), 2.0), m.bias: torch.full((1,), 5.0)}))
    total = acc.grads()
    assert torch.equal(total.get(m.weight), torch.full((1, 2), 3.0))
    assert torch.equal(total.get(m.bias), torch.full((1,), 5.0))
