"""`burnlike.nn.norm`: Burn's normalizations (burn-nn `modules/norm/`, v0.21.0), with inputs and
expected outputs transcribed from their unit tests (batch.rs, layer.rs, group.rs, instance.rs, rms.rs),
BatchNorm's running variance from Burn's formula (the biased batch variance), and their records."""

from __future__ import annotations

import pytest
import torch

from burnlike.nn import (
    BatchNormConfig,
    GroupNormConfig,
    InstanceNormConfig,
    LayerNormConfig,
    RmsNormConfig,
)
from tests.nn.helpers import burn_file, layout, param, saved_item

# batch.rs tests_2d::input_tensor
BN_INPUT = torch.tensor([
    [[[0.9601, 0.7277], [0.1270, 0.5441]], [[0.6272, 0.9034], [0.4066, 0.7179]], [[0.9378, 0.7230], [0.3544, 0.9591]]],
    [[[0.6356, 0.1362], [0.1333, 0.7287]], [[0.0249, 0.9509], [0.3791, 0.2481]], [[0.6600, 0.5945], [0.5424, 0.4767]]],
])
# group.rs/instance.rs `..._affine_true` input
AFFINE_INPUT = torch.tensor([
    [[0.3345, 0.4429, 0.6639], [0.5041, 0.4175, 0.8437], [0.6159, 0.3758, 0.4071],
     [0.5417, 0.5785, 0.7671], [0.3837, 0.9883, 0.0420], [0.4808, 0.8989, 0.6144]],
    [[0.3930, 0.2098, 0.0602], [0.2298, 0.9425, 0.0333], [0.7409, 0.8172, 0.8879],
     [0.4846, 0.0486, 0.2029], [0.6741, 0.9765, 0.6864], [0.2827, 0.5534, 0.2125]],
])


def close(actual: torch.Tensor, expected: list, atol: float = 1e-3, rtol: float = 0.0) -> None:
    torch.testing.assert_close(actual.detach(), torch.tensor(expected), atol=atol, rtol=rtol)


def burn_close(actual: torch.Tensor, expected: list) -> None:
    """Burn's `Tolerance::default()` (balanced: 0.5% relative, 1e-5 absolute)."""
    close(actual, expected, atol=1e-5, rtol=0.005)


def test_batch_norm_defaults():
    config = BatchNormConfig(3)
    assert (config.epsilon, config.momentum) == (1e-5, 0.1)
    bn = config.init()
    assert bn.gamma.tolist() == [1.0] * 3 and bn.beta.tolist() == [0.0] * 3
    assert bn.running_mean.tolist() == [0.0] * 3 and bn.running_var.tolist() == [1.0] * 3


def test_batch_norm_running_stats_after_one_step_are_burns():
    """batch.rs `forward_train`: running_var = (1 - momentum)·running_var + momentum·mean((x - mean)²)
    — the biased batch variance (torch's BatchNorm2d moves towards the unbiased one). Burn's unit tests
    `batch_norm_running_mean` ([0.0499, 0.0532, 0.0656]) and `batch_norm_running_var` ([0.9106,
    0.9105, 0.9045], within their 0.5% tolerance) hold too."""
    bn = BatchNormConfig(3).init().train()
    bn(BN_INPUT)
    x = BN_INPUT.double().numpy()
    biased = ((x - x.mean(axis=(0, 2, 3), keepdims=True)) ** 2).mean(axis=(0, 2, 3))
    close(bn.running_var, (0.9 + 0.1 * biased).tolist(), 1e-6)
    close(bn.running_mean, (0.1 * x.mean(axis=(0, 2, 3))).tolist(), 1e-6)
    burn_close(bn.running_mean, [0.0499, 0.0532, 0.0656])
    burn_close(bn.running_var, [0.9106, 0.9105, 0.9045])
    torch_bn = torch.nn.BatchNorm2d(3).train()
    torch_bn(BN_INPUT)
    assert (torch_bn.running_var - bn.running_var).abs().min() > 5e-4  # torch's numbers are not Burn's


def test_batch_norm_forward_in_training_and_inference():
    """batch.rs tests_2d `batch_norm_forward_train` and `batch_norm_forward_inference` (after one
    training step, evaluation uses the running stats); tests_1d the same for rank 3."""
    bn = BatchNormConfig(3).init().train()
    out = bn(BN_INPUT)
    close(out[0, 0], [[1.5136, 0.7506], [-1.2216, 0.1477]])
    close(out[1, 2], [[0.0200, -0.3097], [-0.5715, -0.9026]])
    valid = bn.valid()
    burn_close(valid(BN_INPUT)[0, 0], [[0.9538, 0.7103], [0.0808, 0.5179]])
    burn_close(valid(BN_INPUT)[1, 1], [[-0.0297, 0.9408], [0.3415, 0.2042]])
    bn1 = BatchNormConfig(3).init().train()
    x1 = torch.tensor([[[0.9601, 0.7277], [0.6272, 0.9034], [0.9378, 0.7230]],
                       [[0.6356, 0.1362], [0.0249, 0.9509], [0.6600, 0.5945]]])
    close(bn1(x1)[1], [[6.8856e-02, -1.5923e+00], [-1.6318e+00, 8.7949e-01], [-5.3368e-01, -1.0416e+00]])
    burn_close(bn1.eval()(x1)[0], [[0.9409, 0.6976], [0.5892, 0.8774], [0.9106, 0.6844]])
    with pytest.raises(ValueError, match="rank >= 2"):
        bn1(torch.ones(3))


def test_batch_norm_record(tmp_path):
    """BatchNorm {gamma, beta, running_mean, running_var, momentum: nil, epsilon: nil}; a record in
    that layout loads its running stats."""
    assert layout(saved_item(BatchNormConfig(2).init(), tmp_path)) == {
        "gamma": (2,), "beta": (2,), "running_mean": (2,), "running_var": (2,), "momentum": None, "epsilon": None}
    path = burn_file(tmp_path / "bn.mpk", {"gamma": param([2.0, 1.0]), "beta": param([0.0, 1.0]),
                                           "running_mean": param([1.0, 0.0]), "running_var": param([4.0, 1.0]),
                                           "momentum": None, "epsilon": None})
    bn = BatchNormConfig(2, epsilon=0.0).init().load_file(path).eval()
    assert bn(torch.tensor([[3.0, 5.0]])).tolist() == [[2.0, 6.0]]


def test_layer_norm_forward_and_defaults():
    """layer.rs `layer_norm_forward`, `_large_epsilon` (1e-1), `_no_bias`."""
    x = torch.tensor([[-0.6897, -2.7106, 2.2222, -1.0330, -0.8933, 1.1765, 0.0601, 1.5252, -0.3630, 0.6728]])
    expected = [[-0.4990, -1.9680, 1.6178, -0.7486, -0.6470, 0.8576, 0.0461, 1.1111, -0.2614, 0.4915]]
    config = LayerNormConfig(10)
    assert (config.epsilon, config.bias) == (1e-5, True)
    close(config.init()(x), expected)
    close(config.with_epsilon(1e-1).init()(x),
          [[-0.4863, -1.9180, 1.5766, -0.7295, -0.6305, 0.8358, 0.0449, 1.0828, -0.2548, 0.4790]])
    no_bias = config.with_bias(False).init()
    assert no_bias.beta is None
    close(no_bias(x), expected)


def test_layer_norm_record_beta_is_an_option(tmp_path):
    assert layout(saved_item(LayerNormConfig(4).init(), tmp_path)) == {"gamma": (4,), "beta": (4,), "epsilon": None}
    assert layout(saved_item(LayerNormConfig(4).with_bias(False).init(), tmp_path)) == {
        "gamma": (4,), "beta": None, "epsilon": None}


def test_group_norm_forward():
    """group.rs `group_norm_forward_affine_true` (3 groups of 6 channels; gamma ones, beta zeros)."""
    module = GroupNormConfig(3, 6).init()
    assert module.gamma.tolist() == [1.0] * 6 and module.beta.tolist() == [0.0] * 6
    out = module(AFFINE_INPUT)
    close(out[0], [[-1.1694, -0.5353, 0.7572], [-0.1775, -0.6838, 1.8087], [0.5205, -1.3107, -1.0723],
                   [-0.0459, 0.2351, 1.6734], [-0.5796, 1.3218, -1.6544], [-0.2744, 1.0406, 0.1459]])
    close(out[1, 5], [-1.0903, -0.0419, -1.3623])
    plain = GroupNormConfig(2, 6).with_affine(False).init()
    assert plain.gamma is None and plain.beta is None
    with pytest.raises(ValueError, match="divisible"):
        GroupNormConfig(4, 6).init()


def test_instance_norm_forward_and_default_affine():
    """instance.rs `instance_norm_forward_affine_true`; Burn's default is affine (torch's: not)."""
    config = InstanceNormConfig(6)
    assert (config.epsilon, config.affine) == (1e-5, True)
    out = config.init()(AFFINE_INPUT)
    close(out[0], [[-1.06458, -0.2738, 1.33838], [-0.45848, -0.92929, 1.38777], [1.40388, -0.84877, -0.55511],
                   [-0.88515, -0.51245, 1.3976], [-0.22397, 1.32124, -1.09727], [-1.05468, 1.34316, -0.28848]])
    close(out[1, 3], [1.32524, -1.08999, -0.23524])


def test_rms_norm_forward():
    """rms.rs `rms_norm_forward`: arange(9) as [3, 3]."""
    module = RmsNormConfig(3).init()
    assert module.epsilon == 1e-5 and module.gamma.tolist() == [1.0] * 3
    close(module(torch.arange(9.0).reshape(3, 3)),
          [[0.0000, 0.7746, 1.5492], [0.7348, 0.9798, 1.2247], [0.8514, 0.9933, 1.1352]])


def test_norm_records(tmp_path):
    assert layout(saved_item(GroupNormConfig(2, 4).init(), tmp_path)) == {
        "gamma": (4,), "beta": (4,), "num_groups": None, "num_channels": None, "epsilon": None, "affine": None}
    assert layout(saved_item(InstanceNormConfig(4).init(), tmp_path)) == {
        "gamma": (4,), "beta": (4,), "num_channels": None, "epsilon": None, "affine": None}
    assert layout(saved_item(RmsNormConfig(4).init(), tmp_path)) == {"gamma": (4,), "epsilon": None}
