"""`burnlike.optim.rule`: RuleOptimizer, Burn's per-tensor update rule run as a torch optimizer.
`step(closure)` runs Lightning's closure first, so the rule sees the gradient it produced, returns
its loss, keeps per-parameter state between steps and skips parameters without a gradient; Burn's
optimizers built on it (Adan, BurnAdamW, Muon) step from that gradient."""

import pytest
import torch
from torch import nn

from burnlike.optim import Adan, BurnAdamW, Muon, MuonConfig
from burnlike.optim.rule import RuleOptimizer
from tests.optim.helpers import param


class PlainStep(RuleOptimizer):
    """θ ← θ - lr·g, recording what it was given."""

    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})
        self.seen = []

    def update(self, param, grad, state, group):
        state["n"] = state.get("n", 0) + 1
        self.seen.append((grad.clone(), state["n"], group["lr"]))
        param.sub_(grad, alpha=group["lr"])


def test_rule_optimizer_runs_the_closure_first_and_returns_its_loss():
    """Lightning hands the optimizer a closure that runs forward and backward: the update must see
    the gradient the closure produced, and step() returns the closure's loss."""
    p = param(1.0, -2.0)
    opt = PlainStep([p], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()  # grad 2p
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 5.0 and loss.requires_grad  # the closure ran with grad enabled
    assert p.tolist() == [0.0, 0.0]  # 1 - 0.5·2, -2 - 0.5·(-4)
    assert opt.step() is None  # no closure: no loss, the stored gradient is applied again
    assert p.tolist() == [-1.0, 2.0]
    assert [n for _, n, _ in opt.seen] == [1, 2]  # the per-parameter state persists between steps


def test_rule_optimizer_skips_parameters_without_gradient():
    p, q = param(1.0), param(2.0)
    opt = PlainStep([p, q], lr=1.0)
    p.grad = torch.tensor([0.25], dtype=torch.float64)
    opt.step()
    assert p.tolist() == [0.75] and q.tolist() == [2.0] and len(opt.seen) == 1


def test_rule_optimizer_requires_an_update_rule():
    p = param(1.0)
    p.grad = torch.ones(1, dtype=torch.float64)
    with pytest.raises(NotImplementedError):
        RuleOptimizer([p], {"lr": 1.0}).step()


@pytest.mark.parametrize("optimizer", [
    lambda ps: Adan(ps, 0.1), lambda ps: BurnAdamW(ps, 0.1, cautious_weight_decay=True),
    lambda ps: Muon(ps, 0.1, MuonConfig())])
def test_rule_based_optimizers_step_from_the_closures_gradient(optimizer):
    """Burn's optimizers that run on RuleOptimizer move the weights from the closure's gradient."""
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(3, 3))
    opt = optimizer([w])
    before = w.detach().clone()

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx((before * before).sum().item())
    assert (w.detach() * w.detach()).sum().item() < loss.item()  # a step against the gradient
