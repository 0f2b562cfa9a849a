"""`burnlike.optim.adamw`: BurnAdamW, Burn 0.19's AdamW with cautious weight decay (decay only where
the weight and the first moment agree in sign), which torch's AdamW lacks. Its defaults are Burn's,
and its steps follow Burn's rule, with and without the cautious mask (and AMSGrad), as
`AdamWConfig(cautious_weight_decay=True)` builds it."""

import numpy as np
import pytest
import torch

from burnlike.optim import AdamWConfig, BurnAdamW
from tests.optim.helpers import GRADS, adam_rule, adamw_reference, assert_matches_rule, param, run_custom_loop


def test_burn_adamw_defaults_are_burns():
    d = BurnAdamW([param(1.0)], 0.1).defaults
    assert (d["lr"], d["betas"], d["eps"], d["weight_decay"], d["amsgrad"], d["cautious_weight_decay"]) ==\
        (0.1, (0.9, 0.999), 1e-5, 1e-4, False, False)


@pytest.mark.parametrize(("lr", "wd"), [(0.1, 0.5), (2.0, 0.5)])  # lr·wd = 1: the weight is zeroed first
def test_burn_adamw_without_cautious_decay_matches_burns_rule(lr, wd):
    p = param(0.5, -0.25, 1.0)
    opt = BurnAdamW([p], lr, betas=(0.8, 0.9), eps=0.01, weight_decay=wd)
    got = []
    for g in GRADS:
        p.grad = torch.tensor(g)
        opt.step()
        got.append(p.detach().numpy().copy())
    np.testing.assert_allclose(got, adamw_reference(np.array([0.5, -0.25, 1.0]), GRADS, lr, 0.8, 0.9, 0.01, wd),
                               rtol=0, atol=1e-12)


def test_cautious_weight_decay_at_zero_moment_decays_only_positive_weights():
    """Burn's mask is (θ ≥ 0) == (m ≥ 0): with no gradient (m = 0) a positive weight decays, a
    negative one doesn't."""
    p = param(0.5, -0.5)
    opt = BurnAdamW([p], 0.1, weight_decay=0.5, cautious_weight_decay=True)
    p.grad = torch.zeros(2, dtype=torch.float64)
    opt.step()
    assert p.tolist() == pytest.approx([0.5 - 0.1 * 0.5 * 0.5, -0.5], abs=1e-12)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_cautious_weight_decay_matches_burn_rule(amsgrad):
    lr, wd = 0.1, 0.5
    seen = run_custom_loop(AdamWConfig(weight_decay=wd, cautious_weight_decay=True, amsgrad=amsgrad), lr)
    assert_matches_rule(seen, adam_rule(lr, 0.9, 0.999, 1e-5, amsgrad, decoupled=wd, cautious=True), dict, atol=2e-6)
    plain = run_custom_loop(AdamWConfig(weight_decay=wd, amsgrad=amsgrad), lr)  # torch.optim.AdamW
    assert_matches_rule(plain, adam_rule(lr, 0.9, 0.999, 1e-5, amsgrad, decoupled=wd), dict, atol=2e-6)
    assert not np.allclose(seen[-1][0][0], plain[-1][0][0], atol=1e-4)  # the mask changed some weights


def test_adamw_update_defaults_to_plain_decay_without_amsgrad():
    """Called without `amsgrad`/`cautious` (a public function's defaults), a step is plain AdamW: no
    max-of-second-moments state, and the decay applies even where it opposes the update."""
    from burnlike.optim.adamw import adamw_update

    param, state = torch.tensor([1.0, -2.0]), {}
    adamw_update(param, torch.tensor([-0.5, -0.5]), state, lr=0.1, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                 weight_decay=0.5)
    assert set(state) == {"step", "exp_avg", "exp_avg_sq"}
    # decayed by 1 - lr * wd = 0.95 everywhere, then the first bias-corrected step (+lr against the gradient)
    torch.testing.assert_close(param, torch.tensor([1.0 * 0.95 + 0.1, -2.0 * 0.95 + 0.1]))
