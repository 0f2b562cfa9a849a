"""`burnlike.nn.dropout`: Burn's `Dropout` (burn-nn `modules/dropout.rs`, v0.21.0)."""

from __future__ import annotations

import pytest
import torch

from burnlike.nn import DropoutConfig


def test_training_drops_and_scales_evaluation_keeps():
    """dropout.rs `with_ad_backend_should_mark_input` / `without_ad_backend_should_not_change_input`:
    Burn's formula x·mask/(1 - prob) in training (torch's `.train()` is Burn's autodiff backend), the
    identity in evaluation."""
    dropout = DropoutConfig(0.5).init()
    assert dropout.prob == 0.5
    x = torch.ones(100, 100)
    out = dropout.train()(x)
    assert set(out.unique().tolist()) == {0.0, 2.0} and 0.4 < (out == 0).float().mean() < 0.6
    assert torch.equal(dropout.eval()(x), x)
    assert torch.equal(DropoutConfig(0.0).init().train()(x), x)


def test_probability_must_be_within_zero_and_one():
    """`dropout_prob_invalid` (should_panic); Burn's config has no default probability."""
    with pytest.raises(ValueError, match="Dropout probability should be between 0 and 1"):
        DropoutConfig(-10.0).init()
    with pytest.raises(TypeError):
        DropoutConfig()  # type: ignore[call-arg]
