"""Burn's recurrent layers (burn-nn `modules/rnn/`): `LstmConfig(d_input, d_hidden, bias)`,
`BiLstmConfig(...)`, `GruConfig(...)`, `BiGruConfig(...)`, `LstmState(cell, hidden)`, `GateController`.

Burn's gate layout, not torch's `nn.LSTM`/`nn.GRU`: each gate is a `GateController` of two Linear
layers (`input_transform` d_input → d_hidden, `hidden_transform` d_hidden → d_hidden), each with its
own bias, stored `[d_in, d_out]` like any Burn Linear; the LSTM's gates are `input_gate`,
`forget_gate`, `output_gate`, `cell_gate` (torch packs i, f, g, o in one `weight_ih_l0`), the GRU's
`update_gate`, `reset_gate`, `new_gate`. Burn's initializer is XavierNormal(gain 1) (torch: uniform
±1/√d_hidden). Inputs are batch-first by default (torch: sequence-first). Per step (σ = the gate
activation, sigmoid by default; tanh for the cell and hidden ones):
LSTM `i, f, o = σ(·)`, `g = tanh(·)`, `c = f·c + i·g` (clipped to ±clip if set), `h = o·tanh(c)`;
GRU (`reset_after`, the default) `z, r = σ(·)`, `n = tanh(W_in x + b_in + r·(W_hn h + b_hn))`,
`h = (1 - z)·n + z·h`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from burnlike.config import config
from burnlike.module import Module
from burnlike.nn.activation import ActivationConfig
from burnlike.nn.initializer import Initializer
from burnlike.nn.linear import Linear
from burnlike.record.format.walker import Field, named_fields
from burnlike.record.tensor.version import is_0_19

XAVIER_DEFAULT = Initializer.XavierNormal(gain=1.0)
"""Burn's recurrent layers' initializer, XavierNormal(gain 1)."""


class LstmState(NamedTuple):
    """Burn's `LstmState::new(cell, hidden)`: `[batch, d_hidden]` each (BiLstm: `[2, batch, d_hidden]`)."""

    cell: Tensor
    """The cell state."""
    hidden: Tensor
    """The hidden state."""

    @classmethod
    def new(cls, cell: Tensor, hidden: Tensor) -> LstmState:
        """Burn's `LstmState::new(cell, hidden)`.

        Args:
            cell: The cell state.
            hidden: The hidden state.
        """
        return cls(cell, hidden)


class GateController(Module):
    """Burn's `GateController`: `gate_product(x, h) = input_transform(x) + hidden_transform(h)`.

    Args:
        d_input: Input features.
        d_output: Output features (the hidden size).
        bias: Whether both linear layers have biases.
        initializer: How their weights and biases are drawn.
        device: Where the parameters are created.

    Attributes:
        input_transform: `Linear(d_input, d_output)` on the input.
        hidden_transform: `Linear(d_output, d_output)` on the hidden state.
    """

    __burn_fields__ = ("input_transform", "hidden_transform")

    def __init__(self, d_input: int, d_output: int, bias: bool, initializer: Initializer, *,
                 device: Any = None) -> None:
        super().__init__()
        self.input_transform = Linear(d_input, d_output, bias, initializer, device=device)
        self.hidden_transform = Linear(d_output, d_output, bias, initializer, device=device)

    def gate_product(self, input: Tensor, hidden: Tensor) -> Tensor:
        """The gate's pre-activation, `input_transform(input) + hidden_transform(hidden)`.

        Args:
            input: `[B, d_input]`.
            hidden: `[B, d_output]`.

        Returns:
            `[B, d_output]`.
        """
        out: Tensor = self.input_transform(input) + self.hidden_transform(hidden)
        return out


def _stacked(gates: list[GateController], part: str) -> tuple[Tensor, Tensor | None]:
    """The gates' `part` Linear layers as one (weights and biases concatenated by output)."""
    layers: list[Linear] = [getattr(g, part) for g in gates]
    weight = torch.cat([layer.weight for layer in layers])
    bias = None if layers[0].bias is None else torch.cat([layer.bias for layer in layers])
    return weight, bias


def _steps(length: int, reverse: bool) -> range:
    return range(length - 1, -1, -1) if reverse else range(length)


class Lstm(Module):
    """Burn's `Lstm`: `forward(x, state=None) -> (output [B, T, d_hidden], LstmState)` (sequence-first
    with `batch_first=False`; `reverse` walks the sequence backwards, each output staying at its own
    time step; `input_forget` couples f = 1 - i).

    Args:
        d_input: Input features.
        d_hidden: Hidden (and output) features.
        bias: Whether the gates' linear layers have biases.
        initializer: How the gates' weights and biases are drawn.
        batch_first: Inputs and outputs are `[B, T, ·]`; False: `[T, B, ·]`.
        reverse: Walk the sequence backwards (each output stays at its own time step).
        clip: Clip the cell state (LSTM) or hidden state (GRU) to ±clip; None: no clipping.
        input_forget: Couple the forget gate to the input gate: f = 1 - i.
        gate_activation: The gates' activation.
        cell_activation: The activation of the cell candidate.
        hidden_activation: The activation of the hidden output (LSTM: of the cell; GRU: of the new gate).
        device: Where the parameters are created.

    Attributes:
        input_gate: i.
        forget_gate: f.
        output_gate: o.
        cell_gate: g, the cell candidate.
        d_hidden: Hidden features.
        batch_first: Whether inputs are batch-first.
        reverse: Whether the sequence is walked backwards.
        clip: The cell state's clip, or None.
        input_forget: Whether f = 1 - i.
        gate_activation: The gates' activation.
        cell_activation: The cell candidate's activation.
        hidden_activation: The cell's activation.
    """

    def __init__(self, d_input: int, d_hidden: int, bias: bool, initializer: Initializer = XAVIER_DEFAULT,
                 batch_first: bool = True, reverse: bool = False, clip: float | None = None,
                 input_forget: bool = False, gate_activation: ActivationConfig = ActivationConfig.Sigmoid,
                 cell_activation: ActivationConfig = ActivationConfig.Tanh,
                 hidden_activation: ActivationConfig = ActivationConfig.Tanh, *, device: Any = None) -> None:
        super().__init__()
        self.input_gate, self.forget_gate, self.output_gate, self.cell_gate = (
            GateController(d_input, d_hidden, bias, initializer, device=device) for _ in range(4))
        self.d_hidden, self.batch_first, self.reverse, self.clip = d_hidden, batch_first, reverse, clip
        self.input_forget = input_forget
        self.gate_activation = gate_activation.init(device)
        self.cell_activation = cell_activation.init(device)
        self.hidden_activation = hidden_activation.init(device)

    def forward(self, batched_input: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """Run over the sequence.

        Args:
            batched_input: `[B, T, d_input]` (`[T, B, d_input]` with `batch_first=False`).
            state: The initial state, `[B, d_hidden]` each; None: zeros.

        Returns:
            Every step's hidden state `[B, T, d_hidden]` and the final state.
        """
        x = batched_input if self.batch_first else batched_input.transpose(0, 1)
        output, final = self.forward_iter(x, state, self.reverse)
        return (output if self.batch_first else output.transpose(0, 1)), final

    def forward_iter(self, x: Tensor, state: LstmState | None, reverse: bool) -> tuple[Tensor, LstmState]:
        """Batch-first `x`: every time step in `reverse` order or not.

        Args:
            x: `[B, T, d_input]`.
            state: The initial state; None: zeros.
            reverse: Walk the sequence backwards.
        """
        batch, length, _ = x.shape
        gates = [self.input_gate, self.forget_gate, self.output_gate, self.cell_gate]
        w_in, b_in = _stacked(gates, "input_transform")
        w_hidden, b_hidden = _stacked(gates, "hidden_transform")
        inputs = F.linear(x, w_in, b_in)  # every step's input part at once: [B, T, 4·H]
        if state is None:
            cell = x.new_zeros(batch, self.d_hidden)
            hidden = x.new_zeros(batch, self.d_hidden)
        else:
            cell, hidden = state.cell, state.hidden
        outputs: list[Tensor] = [x.new_empty(0)] * length
        for t in _steps(length, reverse):
            i, f, o, g = (inputs[:, t] + F.linear(hidden, w_hidden, b_hidden)).chunk(4, dim=1)
            i = self.gate_activation(i)
            f = 1.0 - i if self.input_forget else self.gate_activation(f)
            o = self.gate_activation(o)
            cell = f * cell + i * self.cell_activation(g)
            if self.clip is not None:
                cell = cell.clamp(-self.clip, self.clip)
            hidden = o * self.hidden_activation(cell)
            outputs[t] = hidden
        return torch.stack(outputs, dim=1), LstmState(cell, hidden)

    def burn_record_fields(self, version: str) -> list[Field]:
        names = ["input_gate", "forget_gate", "output_gate", "cell_gate", "d_hidden"]
        if not is_0_19(version):
            names += ["batch_first", "reverse", "clip", "input_forget", "gate_activation", "cell_activation",
                      "hidden_activation"]
        return named_fields(self, names, version)


class BiLstm(Module):
    """Burn's `BiLstm`: a forward and a reverse `Lstm` (record fields `forward`, `reverse`); output
    `[B, T, 2·d_hidden]`, state `[2, B, d_hidden]` (forward's first).

    Args:
        d_input: Input features.
        d_hidden: Hidden (and output) features.
        bias: Whether the gates' linear layers have biases.
        initializer: How the gates' weights and biases are drawn.
        batch_first: Inputs and outputs are `[B, T, ·]`; False: `[T, B, ·]`.
        clip: Clip the cell state (LSTM) or hidden state (GRU) to ±clip; None: no clipping.
        input_forget: Couple the forget gate to the input gate: f = 1 - i.
        gate_activation: The gates' activation.
        cell_activation: The activation of the cell candidate.
        hidden_activation: The activation of the hidden output (LSTM: of the cell; GRU: of the new gate).
        device: Where the parameters are created.

    Attributes:
        forward_lstm: The forward `Lstm` (Burn's field `forward`).
        reverse: The reverse `Lstm`.
        d_hidden: Hidden features per direction.
        batch_first: Whether inputs are batch-first.
    """

    def __init__(self, d_input: int, d_hidden: int, bias: bool, initializer: Initializer = XAVIER_DEFAULT,
                 batch_first: bool = True, clip: float | None = None, input_forget: bool = False,
                 gate_activation: ActivationConfig = ActivationConfig.Sigmoid,
                 cell_activation: ActivationConfig = ActivationConfig.Tanh,
                 hidden_activation: ActivationConfig = ActivationConfig.Tanh, *, device: Any = None) -> None:
        super().__init__()
        self.forward_lstm, self.reverse = (
            Lstm(d_input, d_hidden, bias, initializer, True, False, clip, input_forget, gate_activation,
                 cell_activation, hidden_activation, device=device) for _ in range(2))
        self.d_hidden, self.batch_first = d_hidden, batch_first

    def forward(self, batched_input: Tensor, state: LstmState | None = None) -> tuple[Tensor, LstmState]:
        """Run both directions over the sequence.

        Args:
            batched_input: `[B, T, d_input]` (`[T, B, d_input]` with `batch_first=False`).
            state: The initial state, `[2, B, d_hidden]` each (forward's first); None: zeros.

        Returns:
            The outputs `[B, T, 2·d_hidden]` (forward's, then reverse's) and the final state.
        """
        x = batched_input if self.batch_first else batched_input.transpose(0, 1)
        first = None if state is None else LstmState(state.cell[0], state.hidden[0])
        second = None if state is None else LstmState(state.cell[1], state.hidden[1])
        out_forward, final_forward = self.forward_lstm(x, first)
        out_reverse, final_reverse = self.reverse.forward_iter(x, second, True)
        output = torch.cat([out_forward, out_reverse], dim=2)
        final = LstmState(torch.stack([final_forward.cell, final_reverse.cell]),
                          torch.stack([final_forward.hidden, final_reverse.hidden]))
        return (output if self.batch_first else output.transpose(0, 1)), final

    def burn_record_fields(self, version: str) -> list[Field]:
        fields = [Field("forward", "module", self.forward_lstm), Field("reverse", "module", self.reverse),
                  Field("d_hidden", "nil")]
        return fields if is_0_19(version) else [*fields, Field("batch_first", "nil")]


class Gru(Module):
    """Burn's `Gru`: `forward(x [B, T, d_input], state [B, d_hidden] | None) -> [B, T, d_hidden]`;
    `reset_after` (default true, torch's formula) applies the reset gate after the hidden product.

    Args:
        d_input: Input features.
        d_hidden: Hidden (and output) features.
        bias: Whether the gates' linear layers have biases.
        reset_after: Apply the reset gate after the hidden product (torch's formula); False: before.
        initializer: How the gates' weights and biases are drawn.
        gate_activation: The gates' activation.
        hidden_activation: The activation of the hidden output (LSTM: of the cell; GRU: of the new gate).
        clip: Clip the cell state (LSTM) or hidden state (GRU) to ±clip; None: no clipping.
        device: Where the parameters are created.

    Attributes:
        update_gate: z.
        reset_gate: r.
        new_gate: n, the candidate.
        d_hidden: Hidden features.
        reset_after: Whether the reset gate applies after the hidden product.
        clip: The hidden state's clip, or None.
        gate_activation: The gates' activation.
        hidden_activation: The new gate's activation.
    """

    def __init__(self, d_input: int, d_hidden: int, bias: bool, reset_after: bool = True,
                 initializer: Initializer = XAVIER_DEFAULT, gate_activation: ActivationConfig =
                     ActivationConfig.Sigmoid,
                 hidden_activation: ActivationConfig = ActivationConfig.Tanh, clip: float | None = None, *,
                 device: Any = None) -> None:
        super().__init__()
        self.update_gate, self.reset_gate, self.new_gate = (
            GateController(d_input, d_hidden, bias, initializer, device=device) for _ in range(3))
        self.d_hidden, self.reset_after, self.clip = d_hidden, reset_after, clip
        self.gate_activation = gate_activation.init(device)
        self.hidden_activation = hidden_activation.init(device)

    def forward(self, batched_input: Tensor, state: Tensor | None = None) -> Tensor:
        """Run over the sequence (batch-first, as Burn's `Gru`).

        Args:
            batched_input: `[B, T, d_input]`.
            state: The initial hidden state `[B, d_hidden]`; None: zeros.

        Returns:
            Every step's hidden state, `[B, T, d_hidden]`.
        """
        return self.forward_iter(batched_input, state, False)[0]

    def forward_iter(self, x: Tensor, state: Tensor | None, reverse: bool) -> tuple[Tensor, Tensor]:
        """Every time step in `reverse` order or not.

        Args:
            x: `[B, T, d_input]`.
            state: The initial hidden state; None: zeros.
            reverse: Walk the sequence backwards.

        Returns:
            Every step's hidden state `[B, T, d_hidden]` and the final one.
        """
        batch, length, _ = x.shape
        gates = [self.update_gate, self.reset_gate, self.new_gate]
        w_in, b_in = _stacked(gates, "input_transform")
        inputs = F.linear(x, w_in, b_in)  # [B, T, 3·H]
        w_zr, b_zr = _stacked(gates[:2], "hidden_transform")
        new_hidden = self.new_gate.hidden_transform
        hidden = x.new_zeros(batch, self.d_hidden) if state is None else state
        outputs: list[Tensor] = [x.new_empty(0)] * length
        for t in _steps(length, reverse):
            in_z, in_r, in_n = inputs[:, t].chunk(3, dim=1)
            h_z, h_r = F.linear(hidden, w_zr, b_zr).chunk(2, dim=1)
            z = self.gate_activation(in_z + h_z)
            r = self.gate_activation(in_r + h_r)
            if self.reset_after:
                n = self.hidden_activation(in_n + r * new_hidden(hidden))
            else:
                n = self.hidden_activation(in_n + new_hidden(hidden * r))
            hidden = n * (1.0 - z) + z * hidden
            if self.clip is not None:
                hidden = hidden.clamp(-self.clip, self.clip)
            outputs[t] = hidden
        return torch.stack(outputs, dim=1), hidden

    def burn_record_fields(self, version: str) -> list[Field]:
        names = ["update_gate", "reset_gate", "new_gate", "d_hidden", "reset_after"]
        if not is_0_19(version):
            names += ["gate_activation", "hidden_activation", "clip"]
        return named_fields(self, names, version)


class BiGru(Module):
    """Burn's `BiGru`: `forward(x, state [2, B, H] | None) -> (output [B, T, 2·H], state [2, B, H])`.

    Args:
        d_input: Input features.
        d_hidden: Hidden (and output) features.
        bias: Whether the gates' linear layers have biases.
        reset_after: Apply the reset gate after the hidden product (torch's formula); False: before.
        initializer: How the gates' weights and biases are drawn.
        batch_first: Inputs and outputs are `[B, T, ·]`; False: `[T, B, ·]`.
        gate_activation: The gates' activation.
        hidden_activation: The activation of the hidden output (LSTM: of the cell; GRU: of the new gate).
        clip: Clip the cell state (LSTM) or hidden state (GRU) to ±clip; None: no clipping.
        device: Where the parameters are created.

    Attributes:
        forward_gru: The forward `Gru` (Burn's field `forward`).
        reverse: The reverse `Gru`.
        d_hidden: Hidden features per direction.
        batch_first: Whether inputs are batch-first.
    """

    def __init__(self, d_input: int, d_hidden: int, bias: bool, reset_after: bool = True,
                 initializer: Initializer = XAVIER_DEFAULT, batch_first: bool = True,
                 gate_activation: ActivationConfig = ActivationConfig.Sigmoid,
                 hidden_activation: ActivationConfig = ActivationConfig.Tanh, clip: float | None = None, *,
                 device: Any = None) -> None:
        super().__init__()
        self.forward_gru, self.reverse = (
            Gru(d_input, d_hidden, bias, reset_after, initializer, gate_activation, hidden_activation, clip,
                device=device) for _ in range(2))
        self.d_hidden, self.batch_first = d_hidden, batch_first

    def forward(self, batched_input: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Run both directions over the sequence.

        Args:
            batched_input: `[B, T, d_input]` (`[T, B, d_input]` with `batch_first=False`).
            state: The initial hidden states `[2, B, d_hidden]` (forward's first); None: zeros.

        Returns:
            The outputs `[B, T, 2·d_hidden]` and the final states `[2, B, d_hidden]`.
        """
        x = batched_input if self.batch_first else batched_input.transpose(0, 1)
        out_forward, final_forward = self.forward_gru.forward_iter(x, None if state is None else state[0], False)
        out_reverse, final_reverse = self.reverse.forward_iter(x, None if state is None else state[1], True)
        output = torch.cat([out_forward, out_reverse], dim=2)
        return (output if self.batch_first else output.transpose(0, 1)), torch.stack([final_forward, final_reverse])

    def burn_record_fields(self, version: str) -> list[Field]:
        return [Field("forward", "module", self.forward_gru), Field("reverse", "module", self.reverse),
                Field("d_hidden", "nil"), Field("batch_first", "nil")]


@config
class LstmConfig:
    """Burn's `LstmConfig(d_input, d_hidden, bias)`: XavierNormal(gain 1), batch_first true, reverse
    false, clip none, input_forget false, gate Sigmoid, cell and hidden Tanh."""

    d_input: int  # input features
    d_hidden: int  # hidden (and output) features
    bias: bool  # whether the gates' linear layers have biases
    clip: float | None = None  # clip the cell state (LSTM) or hidden state (GRU) to ±clip; None: no clipping
    initializer: Initializer = XAVIER_DEFAULT  # how the gates' weights and biases are drawn
    batch_first: bool = True  # inputs and outputs are `[B, T, ·]`; False: `[T, B, ·]`
    reverse: bool = False  # walk the sequence backwards (each output stays at its own time step)
    input_forget: bool = False  # couple the forget gate to the input gate: f = 1 - i
    gate_activation: ActivationConfig = ActivationConfig.Sigmoid  # the gates' activation
    cell_activation: ActivationConfig = ActivationConfig.Tanh  # the activation of the cell candidate
    # the activation of the hidden output (LSTM: of the cell; GRU: of the new gate)
    hidden_activation: ActivationConfig = ActivationConfig.Tanh

    def init(self, device: Any = None) -> Lstm:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return Lstm(self.d_input, self.d_hidden, self.bias, self.initializer, self.batch_first, self.reverse, self.clip,
                    self.input_forget, self.gate_activation, self.cell_activation, self.hidden_activation, device=device)


@config
class BiLstmConfig:
    """Burn's `BiLstmConfig(d_input, d_hidden, bias)`: as `LstmConfig`, without `reverse`."""

    d_input: int  # input features
    d_hidden: int  # hidden (and output) features
    bias: bool  # whether the gates' linear layers have biases
    clip: float | None = None  # clip the cell state (LSTM) or hidden state (GRU) to ±clip; None: no clipping
    initializer: Initializer = XAVIER_DEFAULT  # how the gates' weights and biases are drawn
    batch_first: bool = True  # inputs and outputs are `[B, T, ·]`; False: `[T, B, ·]`
    input_forget: bool = False  # couple the forget gate to the input gate: f = 1 - i
    gate_activation: ActivationConfig = ActivationConfig.Sigmoid  # the gates' activation
    cell_activation: ActivationConfig = ActivationConfig.Tanh  # the activation of the cell candidate
    # the activation of the hidden output (LSTM: of the cell; GRU: of the new gate)
    hidden_activation: ActivationConfig = ActivationConfig.Tanh

    def init(self, device: Any = None) -> BiLstm:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return BiLstm(self.d_input, self.d_hidden, self.bias, self.initializer, self.batch_first, self.clip,
                      self.input_forget, self.gate_activation, self.cell_activation, self.hidden_activation,
                      device=device)


@config
class GruConfig:
    """Burn's `GruConfig(d_input, d_hidden, bias)`: reset_after true, XavierNormal(gain 1), gate
    Sigmoid, hidden Tanh, clip none."""

    d_input: int  # input features
    d_hidden: int  # hidden (and output) features
    bias: bool  # whether the gates' linear layers have biases
    clip: float | None = None  # clip the cell state (LSTM) or hidden state (GRU) to ±clip; None: no clipping
    reset_after: bool = True  # apply the reset gate after the hidden product (torch's formula); False: before
    initializer: Initializer = XAVIER_DEFAULT  # how the gates' weights and biases are drawn
    gate_activation: ActivationConfig = ActivationConfig.Sigmoid  # the gates' activation
    # the activation of the hidden output (LSTM: of the cell; GRU: of the new gate)
    hidden_activation: ActivationConfig = ActivationConfig.Tanh

    def init(self, device: Any = None) -> Gru:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return Gru(self.d_input, self.d_hidden, self.bias, self.reset_after, self.initializer, self.gate_activation,
                   self.hidden_activation, self.clip, device=device)


@config
class BiGruConfig:
    """Burn's `BiGruConfig(d_input, d_hidden, bias)`: as `GruConfig`, plus batch_first true."""

    d_input: int  # input features
    d_hidden: int  # hidden (and output) features
    bias: bool  # whether the gates' linear layers have biases
    clip: float | None = None  # clip the cell state (LSTM) or hidden state (GRU) to ±clip; None: no clipping
    reset_after: bool = True  # apply the reset gate after the hidden product (torch's formula); False: before
    initializer: Initializer = XAVIER_DEFAULT  # how the gates' weights and biases are drawn
    batch_first: bool = True  # inputs and outputs are `[B, T, ·]`; False: `[T, B, ·]`
    gate_activation: ActivationConfig = ActivationConfig.Sigmoid  # the gates' activation
    # the activation of the hidden output (LSTM: of the cell; GRU: of the new gate)
    hidden_activation: ActivationConfig = ActivationConfig.Tanh

    def init(self, device: Any = None) -> BiGru:
        """The layer, its parameters created on `device` (Burn's `init`).

        Args:
            device: Where the parameters are created.
        """
        return BiGru(self.d_input, self.d_hidden, self.bias, self.reset_after, self.initializer, self.batch_first,
                     self.gate_activation, self.hidden_activation, self.clip, device=device)
