"""`burnlike.nn.activation`: Burn's activations (burn-nn `activation/`, v0.21.0): defaults, forward
values transcribed from their unit tests, and `Activation`'s enum record."""

from __future__ import annotations

import math

import pytest
import torch

from burnlike.nn import (
    GLU,
    Activation,
    ActivationConfig,
    CeluConfig,
    EluConfig,
    Gelu,
    HardShrinkConfig,
    HardSigmoid,
    HardSigmoidConfig,
    HardSwish,
    Initializer,
    LeakyReluConfig,
    PReluConfig,
    Relu,
    Selu,
    Shrink,
    ShrinkConfig,
    Sigmoid,
    SoftplusConfig,
    SoftShrinkConfig,
    Softsign,
    SwiGluConfig,
    Tanh,
    ThresholdedReluConfig,
)
from tests.nn.helpers import layout, saved_item


def close(actual: torch.Tensor, expected: list, atol: float = 1e-4) -> None:
    torch.testing.assert_close(actual.detach(), torch.tensor(expected), atol=atol, rtol=0)


def test_gelu_exact_and_approximate():
    """gelu.rs `forward_approximate` (PyTorch's tanh numbers); the default is the exact (erf) GELU."""
    x = torch.tensor([[-1.0, 0.0, 1.0], [0.5, -0.5, 2.0]])
    close(Gelu.new_approximate()(x), [[-0.1588079929, 0.0, 0.8411920071], [0.3457140028, -0.1542859972, 1.9545977116]],
          1e-5)
    close(Gelu.new()(torch.tensor([1.0])), [0.5 * (1 + math.erf(1 / math.sqrt(2)))], 1e-6)


def test_leaky_relu():
    """leaky_relu.rs `test_leaky_relu_forward` (negative_slope 0.01 by default)."""
    assert LeakyReluConfig().negative_slope == 0.01
    close(LeakyReluConfig().init()(torch.tensor([[0.4410, -0.2507]])), [[0.4410, -0.002507]], 1e-7)


def test_hard_sigmoid_is_burns_not_torchs():
    """hard_sigmoid.rs `test_hard_sigmoid_forward`: alpha 0.2, beta 0.5 ([[0.5882, 0.44986]]);
    torch's Hardsigmoid (slope 1/6) gives other numbers."""
    config = HardSigmoidConfig()
    assert (config.alpha, config.beta) == (0.2, 0.5)
    x = torch.tensor([[0.4410, -0.2507]])
    close(config.init()(x), [[0.5882, 0.44986]])
    close(HardSigmoid()(x), [[0.5882, 0.44986]])
    assert not torch.allclose(torch.nn.Hardsigmoid()(x), config.init()(x), atol=1e-3)
    close(config.init()(torch.tensor([-10.0, 10.0])), [0.0, 1.0])


def test_softplus_celu_elu_thresholded_relu_shrinks():
    """softplus.rs (beta 1: [[0.6931, 1.3133, 0.3133]]; beta 2: [[0.3466, 1.0635]]), celu.rs, elu.rs,
    thresholded_relu.rs (alpha 1.0), shrink.rs (lambda 0.5, bias 0.5; and 0.25/0.125), hard/soft
    shrink (lambda 0.5)."""
    close(SoftplusConfig().init()(torch.tensor([[0.0, 1.0, -1.0]])), [[0.6931, 1.3133, 0.3133]])
    close(SoftplusConfig(beta=2.0).init()(torch.tensor([[0.0, 1.0]])), [[0.3466, 1.0635]])
    close(CeluConfig().init()(torch.tensor([[0.5, -0.5, -1.0]])), [[0.5, -0.393469, -0.632121]], 1e-6)
    close(CeluConfig(alpha=2.0).init()(torch.tensor([[0.0, -2.0]])), [[0.0, -1.264241]], 1e-6)
    close(EluConfig().init()(torch.tensor([[0.4410, -0.2507]])), [[0.4410, -0.22186]], 1e-3)  # Burn: 0.5%
    assert ThresholdedReluConfig().alpha == 1.0
    assert ThresholdedReluConfig().init()(torch.tensor([[0.5, 1.5, -0.2]])).tolist() == [[0.0, 1.5, 0.0]]
    x = torch.tensor([[0.5, -0.5, -1.0], [8.0, 0.3, 0.0]])
    assert ShrinkConfig().init()(x).tolist() == [[0.0, 0.0, -0.5], [7.5, 0.0, 0.0]]
    shrink: Shrink = ShrinkConfig().with_lambda(0.25).with_bias(0.125).init()
    assert shrink(torch.tensor([[0.125, -0.125, -0.5], [0.75, 0.1, 0.0]])).tolist() == [[0.0, 0.0, -0.375],
                                                                                      [0.625, 0.0, 0.0]]
    assert HardShrinkConfig().init()(x).tolist() == [[0.0, 0.0, -1.0], [8.0, 0.0, 0.0]]
    assert SoftShrinkConfig().init()(x).tolist() == [[0.0, 0.0, -0.5], [7.5, 0.0, 0.0]]
    assert ShrinkConfig().to_dict() == {"lambda": 0.5, "bias": 0.5}
    assert ShrinkConfig.from_dict({"lambda": 0.25, "bias": 0.1}) == ShrinkConfig(0.25, 0.1)


def test_unit_activations():
    x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0])
    assert torch.equal(Relu.new()(x), x.clamp_min(0))
    close(Sigmoid.new()(x), (1 / (1 + torch.exp(-x))).tolist(), 1e-6)
    close(Tanh.new()(x), torch.tanh(x).tolist(), 1e-6)
    close(Softsign.new()(x), (x / (1 + x.abs())).tolist(), 1e-6)
    close(HardSwish.new()(x), (x * torch.clamp(x / 6 + 0.5, 0, 1)).tolist(), 1e-6)
    alpha, gamma = 1.6732632423543772, 1.0507009873554805
    close(Selu.new()(x), [gamma * (v if v > 0 else alpha * (math.exp(v) - 1)) for v in x.tolist()], 1e-5)
    close(GLU.new(1)(torch.tensor([[1.0, 2.0, 0.0, 0.0]])), [[0.5, 1.0]], 1e-6)


def test_prelu_defaults_and_record(tmp_path):
    """prelu.rs: num_parameters 1, alpha 0.25; record {alpha, alpha_value: nil}."""
    prelu = PReluConfig().init()
    assert prelu.alpha.tolist() == [0.25] and prelu.alpha_value == 0.25
    close(prelu(torch.tensor([-4.0, 2.0])), [-1.0, 2.0])
    per_channel = PReluConfig(num_parameters=2, alpha=0.5).init()
    close(per_channel(torch.tensor([[[-2.0], [-4.0]]])), [[[-1.0], [-2.0]]])
    assert layout(saved_item(per_channel, tmp_path)) == {"alpha": (2,), "alpha_value": None}


def test_swiglu_forward():
    """swiglu.rs `test_swiglu_forward_no_bias` and `_with_bias` (Constant 0.5 weights)."""
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    config = SwiGluConfig(3, 3).with_initializer(Initializer.Constant(value=0.5))
    assert SwiGluConfig(3, 3).bias is False
    close(config.init()(x), [[8.5732, 8.5732, 8.5732], [56.2189, 56.2189, 56.2189]], 1e-3)
    close(config.with_bias(True).init()(x), [[11.8909, 11.8909, 11.8909], [63.9785, 63.9785, 63.9785]], 1e-3)


def test_activation_config_is_burns_enum():
    """`ActivationConfig` (activation_wrapper.rs): unit variants by name, configured ones wrapping their
    config (Burn's `From` impls); `GeluApproximate` builds a tanh GELU."""
    assert ActivationConfig.Gelu.serde_value() == "Gelu"
    leaky = ActivationConfig.LeakyRelu(LeakyReluConfig(negative_slope=0.2))
    assert leaky.serde_value() == {"LeakyRelu": {"negative_slope": 0.2}}
    assert ActivationConfig.from_serde(leaky.serde_value()) == leaky == ActivationConfig.of(LeakyReluConfig(0.2))
    out = ActivationConfig.GeluApproximate.init()(torch.tensor([1.0]))
    close(out, [0.8411920071], 1e-6)
    assert isinstance(ActivationConfig.Tanh.init().inner, Tanh)
    with pytest.raises(ValueError, match="takes a LeakyReluConfig"):
        ActivationConfig("LeakyRelu", None)


def test_activation_record_is_burns_enum_record(tmp_path):
    """`Activation<B>` records as serde's externally tagged enum: `{"Sigmoid": nil}`, `{"PRelu": {...}}`;
    bincode writes the variant's index (Sigmoid is the 7th of 0.21's 18 variants, the 6th of 0.19's 8)."""
    from burnlike.record.format.module_record import module_to_record

    assert module_to_record(ActivationConfig.Sigmoid.init()) == {"Sigmoid": None}
    prelu = ActivationConfig.PRelu(PReluConfig()).init()
    assert layout(saved_item(prelu, tmp_path)) == {"PRelu": {"alpha": (1,), "alpha_value": None}}
    from burnlike.record.format.walker import fields

    assert fields(ActivationConfig.Sigmoid.init(), "0.21.0")[0].variant == 6
    assert fields(ActivationConfig.Sigmoid.init(), "0.19.0")[0].variant == 5
    with pytest.raises(ValueError, match="no Selu variant"):
        fields(ActivationConfig.Selu.init(), "0.19.0")
    with pytest.raises(TypeError, match="one of Burn's activations"):
        Activation(torch.nn.ReLU())
