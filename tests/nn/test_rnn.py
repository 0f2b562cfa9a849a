"""`burnlike.nn.rnn`: Burn's LSTM and GRU (burn-nn `modules/rnn/`, v0.21.0): Burn's gate layout and
defaults, the values its unit tests derive by hand, agreement with torch's `nn.LSTM`/`nn.GRU` given
the same weights (Burn's per-gate Linear layers packed in torch's order), and the records."""

from __future__ import annotations

import math

import torch
from torch import nn

from burnlike.nn import (
    ActivationConfig,
    BiGruConfig,
    BiLstmConfig,
    GruConfig,
    Initializer,
    LstmConfig,
    LstmState,
)
from tests.nn.helpers import layout, saved_item


def set_gate(gate, weight: float) -> None:
    """A 1→1 gate whose input and hidden weights are `weight`, biases 0 (Burn's tests' `create_gate_controller`)."""
    with torch.no_grad():
        for linear in (gate.input_transform, gate.hidden_transform):
            linear.weight.fill_(weight)
            if linear.bias is not None:
                linear.bias.zero_()


def test_defaults_are_burns():
    config = LstmConfig(2, 3, True)
    assert config.initializer == Initializer.XavierNormal(gain=1.0)
    assert (config.batch_first, config.reverse, config.clip, config.input_forget) == (True, False, None, False)
    assert (config.gate_activation, config.cell_activation, config.hidden_activation) == (
        ActivationConfig.Sigmoid, ActivationConfig.Tanh, ActivationConfig.Tanh)
    gru = GruConfig(2, 3, True)
    assert gru.reset_after is True and gru.initializer == Initializer.XavierNormal(gain=1.0)
    torch.manual_seed(0)
    lstm = LstmConfig(500, 500, False).init()
    std = lstm.input_gate.input_transform.weight.std().item()
    assert abs(std - math.sqrt(2 / 1000)) < 0.002  # Xavier normal: √(2 / (fan_in + fan_out))


def test_lstm_single_step_by_hand():
    """lstm.rs `test_forward_single_input_single_feature`: gates 0.5 (input), 0.7 (forget), 1.1
    (output), 0.9 (cell), x = 0.1: the test expects cell 0.046 and hidden 0.0242 — c = σ(0.05)·tanh(0.09),
    h = σ(0.11)·tanh(c) (its comment's arithmetic slips on tanh(0.09))."""
    lstm = LstmConfig(1, 1, False).init()
    for gate, weight in ((lstm.input_gate, 0.5), (lstm.forget_gate, 0.7), (lstm.output_gate, 1.1),
                         (lstm.cell_gate, 0.9)):
        set_gate(gate, weight)
    output, state = lstm(torch.tensor([[[0.1]]]))
    assert isinstance(state, LstmState)
    torch.testing.assert_close(state.cell, torch.tensor([[0.046]]), atol=1e-4, rtol=0)
    torch.testing.assert_close(state.hidden, torch.tensor([[0.0242]]), atol=1e-4, rtol=0)
    cell = 1 / (1 + math.exp(-0.05)) * math.tanh(0.09)
    torch.testing.assert_close(state.hidden, torch.tensor([[1 / (1 + math.exp(-0.11)) * math.tanh(cell)]]))
    assert torch.equal(output[:, 0], state.hidden)


def test_gru_sequence_by_hand():
    """gru.rs `tests_forward_seq_len_3`: gates 0.5 (update), 0.6 (reset), 0.7 (new), inputs 0.1, 0.2,
    0.3 → hidden 0.0341, 0.0894, 0.1575, with reset after the product or before."""
    for reset_after in (True, False):
        gru = GruConfig(1, 1, False, reset_after=reset_after).init()
        for gate, weight in ((gru.update_gate, 0.5), (gru.reset_gate, 0.6), (gru.new_gate, 0.7)):
            set_gate(gate, weight)
        out = gru(torch.tensor([[[0.1], [0.2], [0.3]]]))
        torch.testing.assert_close(out[0], torch.tensor([[0.0341], [0.0894], [0.1575]]), atol=2e-4, rtol=0)


def torch_lstm(lstm, bidirectional: bool = False) -> nn.LSTM:
    """torch's LSTM with Burn's weights: torch packs the gates (i, f, g, o) = Burn's input, forget,
    cell, output gates; b_ih / b_hh are the input / hidden transforms' biases."""
    layers = [lstm.forward_lstm, lstm.reverse] if bidirectional else [lstm]
    first = layers[0].input_gate.input_transform
    ref = nn.LSTM(first.in_features, first.out_features, batch_first=True, bidirectional=bidirectional)
    for suffix, layer in zip(("", "_reverse"), layers):
        gates = [layer.input_gate, layer.forget_gate, layer.cell_gate, layer.output_gate]
        with torch.no_grad():
            for part, name in (("input_transform", "ih"), ("hidden_transform", "hh")):
                getattr(ref, f"weight_{name}_l0{suffix}").copy_(torch.cat([getattr(g, part).weight for g in gates]))
                getattr(ref, f"bias_{name}_l0{suffix}").copy_(torch.cat([getattr(g, part).bias for g in gates]))
    return ref


def test_lstm_and_bilstm_agree_with_torch_given_burns_gates():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 3)
    lstm = LstmConfig(3, 4, True).init()
    output, state = lstm(x)
    expected, (h, c) = torch_lstm(lstm)(x)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(state.hidden, h[0])
    torch.testing.assert_close(state.cell, c[0])
    bilstm = BiLstmConfig(3, 4, True).init()
    out, final = bilstm(x)
    expected, (h, c) = torch_lstm(bilstm, bidirectional=True)(x)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(final.hidden, h)
    seq_first, _ = BiLstmConfig(3, 4, True, batch_first=False).init()(x.transpose(0, 1))
    assert seq_first.shape == (5, 2, 8)


def test_lstm_reverse_clip_and_coupled_gates():
    """`reverse` reads the sequence backwards (outputs stay at their time step), `clip` bounds the cell
    state, `input_forget` sets f = 1 - i."""
    torch.manual_seed(0)
    x = torch.randn(1, 4, 2)
    lstm = LstmConfig(2, 3, True).init()
    backwards = LstmConfig(2, 3, True, reverse=True).init()
    backwards.load_state_dict(lstm.state_dict())
    out, _ = backwards(x)
    flipped, _ = lstm(x.flip(1))
    torch.testing.assert_close(out, flipped.flip(1))
    clipped = LstmConfig(2, 3, True, clip=0.01).init()
    assert clipped(x * 100)[1].cell.abs().max() <= 0.01
    coupled = LstmConfig(1, 1, False, input_forget=True).init()
    for gate, weight in ((coupled.input_gate, 0.5), (coupled.forget_gate, 5.0), (coupled.output_gate, 1.1),
                         (coupled.cell_gate, 0.9)):
        set_gate(gate, weight)
    state = LstmState(torch.tensor([[1.0]]), torch.tensor([[0.0]]))
    cell = coupled(torch.tensor([[[0.1]]]), state)[1].cell
    i = torch.sigmoid(torch.tensor(0.05))
    torch.testing.assert_close(cell, ((1 - i) * 1.0 + i * torch.tanh(torch.tensor(0.09))).reshape(1, 1))


def test_gru_agrees_with_torch_given_burns_gates():
    """torch's GRU packs (r, z, n) = Burn's reset, update and new gates; Burn's `reset_after` is
    torch's formula."""
    torch.manual_seed(0)
    x = torch.randn(2, 5, 3)
    bigru = BiGruConfig(3, 4, True).init()
    ref = nn.GRU(3, 4, batch_first=True, bidirectional=True)
    for suffix, gru in (("", bigru.forward_gru), ("_reverse", bigru.reverse)):
        gates = [gru.reset_gate, gru.update_gate, gru.new_gate]
        with torch.no_grad():
            for part, name in (("input_transform", "ih"), ("hidden_transform", "hh")):
                getattr(ref, f"weight_{name}_l0{suffix}").copy_(torch.cat([getattr(g, part).weight for g in gates]))
                getattr(ref, f"bias_{name}_l0{suffix}").copy_(torch.cat([getattr(g, part).bias for g in gates]))
    out, state = bigru(x)
    expected, h = ref(x)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(state, h)
    torch.testing.assert_close(bigru.forward_gru(x), expected[..., :4])


def test_records_keep_burns_gate_layout(tmp_path):
    item = layout(saved_item(LstmConfig(2, 3, True).init(), tmp_path))
    assert list(item) == ["input_gate", "forget_gate", "output_gate", "cell_gate", "d_hidden", "batch_first",
                          "reverse", "clip", "input_forget", "gate_activation", "cell_activation", "hidden_activation"]
    assert item["input_gate"] == {"input_transform": {"weight": (2, 3), "bias": (3,)},
                                  "hidden_transform": {"weight": (3, 3), "bias": (3,)}}
    assert item["gate_activation"] == {"Sigmoid": None} and item["cell_activation"] == {"Tanh": None}
    gru = layout(saved_item(GruConfig(2, 3, False).init(), tmp_path))
    assert list(gru) == ["update_gate", "reset_gate", "new_gate", "d_hidden", "reset_after", "gate_activation",
                         "hidden_activation", "clip"]
    assert gru["new_gate"]["input_transform"]["bias"] is None
    assert list(layout(saved_item(BiLstmConfig(2, 3, True).init(), tmp_path))) == ["forward", "reverse", "d_hidden",
                                                                                   "batch_first"]
    from burnlike.record.format.module_record import module_to_record

    assert list(module_to_record(LstmConfig(2, 3, True).init(), version="0.19.0")) == [
        "input_gate", "forget_gate", "output_gate", "cell_gate", "d_hidden"]
