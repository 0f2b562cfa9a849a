"""`burnlike.nn.loss`: Burn's cross-entropy (burn-nn `loss/cross_entropy.rs`, v0.21.0). Each expected
value is what Burn's own tests compute for the same inputs: pads masked, then the mean over every
target; weights summed over every target; smoothed targets; probabilities as input. Burn's
`CrossEntropyLoss::new(pad_index, &device)` spelling, and the non-pad mean kept as an option."""

import pytest
import torch
import torch.nn.functional as F

from burnlike.nn import CrossEntropyLossConfig
from burnlike.nn.loss import CrossEntropyLoss, Reduction
from tests.helpers.expect import raises_exactly

TARGETS = torch.tensor([2, 0, 4, 1])  # cross_entropy.rs `setup!`: batch 4, 5 classes


def logits(seed: int = 0) -> torch.Tensor:
    return torch.randn(4, 5, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def with_logits(x: torch.Tensor, target_probs: torch.Tensor) -> torch.Tensor:
    """Burn's `cross_entropy_with_logits(logits, targets)`: -(log_softmax · targets) summed per row, mean."""
    return -(torch.log_softmax(x, 1) * target_probs).sum(1).mean()


def test_plain_loss_is_burns_cross_entropy_with_logits():
    """cross_entropy.rs `test_cross_entropy_loss`: the one-hot targets' cross-entropy, batch mean."""
    x = logits()
    assert CrossEntropyLossConfig().init().forward(x, TARGETS).item() == pytest.approx(
        with_logits(x, F.one_hot(TARGETS, 5).double()).item(), rel=1e-12)


def test_pad_tokens_are_masked_then_averaged_over_all_targets():
    """cross_entropy.rs `test_cross_entropy_loss_with_pad_token`: pads [1, 2] on targets [2, 0, 4, 1]
    give the rows of targets 0 and 4 only, averaged over all 4 rows (`setup_padded!`'s zero rows)."""
    x = logits()
    padded = torch.tensor([[0.0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], dtype=torch.float64)
    expected = with_logits(x, padded).item()
    assert CrossEntropyLossConfig().with_pad_tokens([1, 2]).init().forward(x, TARGETS).item() == pytest.approx(
        expected, rel=1e-12)
    assert CrossEntropyLossConfig(pad_tokens=[1, 2], smoothing=0.0).init().forward(x, TARGETS).item() == pytest.approx(
        expected, rel=1e-12)  # `test_label_smoothing_with_zero_alpha_and_pad_token`


def test_one_pad_token_halves_a_half_padded_batch_as_burn_does():
    """Burn's mean is over all targets: with half the targets padding, the loss is half of the
    non-pad mean (the mean PyTorch's `ignore_index` gives, still available as `with_non_pad_mean()`)."""
    x, targets = logits(3), torch.tensor([3, 0, 1, 0])
    burn = CrossEntropyLossConfig().with_pad_tokens([0]).init().forward(x, targets)
    non_pad = F.cross_entropy(x, targets, ignore_index=0)
    assert burn.item() == pytest.approx(non_pad.item() / 2, rel=1e-12)
    kept = CrossEntropyLossConfig().with_pad_tokens([0]).init().with_non_pad_mean().forward(x, targets)
    assert kept.item() == pytest.approx(non_pad.item(), rel=1e-12)


def test_weights_divide_by_every_targets_weight():
    """cross_entropy.rs `test_cross_entropy_loss_with_weights`: weights [1, 2, 3, 4, 5], targets
    [2, 0, 4, 1]: -Σ weight·log p / (3 + 1 + 5 + 2); `test_label_smoothing_with_weights_and_alpha_zero`."""
    x, weights = logits(), [1.0, 2.0, 3.0, 4.0, 5.0]
    by_hand = -(torch.log_softmax(x, 1) * F.one_hot(TARGETS, 5) * torch.tensor(weights, dtype=torch.float64)).sum() / 11
    loss = CrossEntropyLossConfig().with_weights(weights).init().forward(x, TARGETS)
    assert loss.item() == pytest.approx(by_hand.item(), rel=1e-6)
    smoothed = CrossEntropyLossConfig(weights=weights, smoothing=0.0).init().forward(x, TARGETS)
    assert smoothed.item() == pytest.approx(loss.item(), rel=1e-6)
    padded = CrossEntropyLossConfig(pad_tokens=[1], weights=weights).init().forward(x, TARGETS)
    no_pad_rows = -(torch.log_softmax(x, 1)[:3] * F.one_hot(TARGETS[:3], 5)
                    * torch.tensor(weights, dtype=torch.float64)).sum() / 11  # the pad's weight 2 still counts
    assert padded.item() == pytest.approx(no_pad_rows.item(), rel=1e-6)


def test_label_smoothing_uses_burns_smoothed_targets():
    """cross_entropy.rs `test_label_smoothing` and `test_label_smoothing_target_conversion`: α = 0.05
    over 5 classes makes the targets 0.96 / 0.01."""
    x = logits()
    smoothed = torch.full((4, 5), 0.01, dtype=torch.float64)
    smoothed[torch.arange(4), TARGETS] = 0.96
    loss = CrossEntropyLossConfig().with_smoothing(0.05).init().forward(x, TARGETS)
    assert loss.item() == pytest.approx(with_logits(x, smoothed).item(), rel=1e-12)
    alpha_zero = CrossEntropyLossConfig().with_smoothing(0.0).init().forward(x, TARGETS)
    assert alpha_zero.item() == pytest.approx(CrossEntropyLossConfig().init().forward(x, TARGETS).item(), rel=1e-12)


def test_probabilities_as_input_give_burns_values():
    """cross_entropy.rs `test_logits_flag_affects_output`: the same probabilities read as logits give
    1.354197, read as probabilities (`with_logits(false)`) 0.88169014."""
    probs = torch.tensor([[0.1, 0.2, 0.7, 0.0, 0.0], [0.7, 0.1, 0.1, 0.1, 0.0],
                          [0.2, 0.2, 0.2, 0.2, 0.2], [0.0, 0.3, 0.3, 0.2, 0.2]])
    assert CrossEntropyLossConfig().init().forward(probs, TARGETS).item() == pytest.approx(1.354197, abs=1e-5)
    assert CrossEntropyLossConfig().with_logits(False).init().forward(probs, TARGETS).item() == pytest.approx(
        0.88169014, abs=1e-5)


@pytest.mark.parametrize(("config", "message"), [
    (CrossEntropyLossConfig(smoothing=1.5),
     "CrossEntropyLoss: alpha of cross-entropy loss with smoothed labels should be in interval [0, 1], got 1.5"),
    (CrossEntropyLossConfig(weights=[1.0, 0.0]), "CrossEntropyLoss: weights of cross-entropy have to be positive (one per class)"),
])
def test_init_refuses_what_burns_assertions_refuse(config, message):
    """cross_entropy.rs `CrossEntropyLossConfig::assertions`: smoothing in [0, 1], weights > 0."""
    with raises_exactly(ValueError, message):
        config.init()


def test_burns_constructor_takes_the_pad_index_then_the_device():
    """cross_entropy.rs `CrossEntropyLoss::new(pad_index, &device)`: `CrossEntropyLoss(0, device)`
    is that loss, not a weighted one."""
    x, targets = logits(1), torch.tensor([3, 0, 1, 0])
    expected = CrossEntropyLossConfig().with_pad_tokens([0]).init("cpu").forward(x, targets)
    assert torch.equal(CrossEntropyLoss(0, "cpu").forward(x, targets), expected)
    assert torch.equal(CrossEntropyLoss.new(0, torch.device("cpu")).forward(x, targets), expected)
    assert torch.equal(CrossEntropyLoss(None, "cpu").forward(x, targets), F.cross_entropy(x, targets))


def test_sequence_logits_are_flattened_to_rows():
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(4))  # [B, C, S]
    targets = torch.tensor([[1, 0, 2], [0, 4, 4]])
    rows = x.movedim(1, -1).reshape(-1, 5)
    loss = CrossEntropyLossConfig(pad_tokens=[0]).init().forward(x, targets)
    expected = CrossEntropyLossConfig(pad_tokens=[0]).init().forward(rows, targets.reshape(-1))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)


def test_reduction_has_burns_variant_names():
    """burn-nn/src/loss/reduction.rs: `Reduction::{Mean, Sum, Auto}`; the UPPERCASE names are aliases."""
    assert Reduction.Mean is Reduction.MEAN is Reduction.Auto and Reduction.Sum is Reduction.SUM
