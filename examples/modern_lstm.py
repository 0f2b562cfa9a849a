"""Burn's `examples/modern-lstm`, in Python: an LSTM with layer norms, stacked and bidirectional, learns
to continue noisy Fibonacci-like sequences, trained by a hand-written loop.

`LstmCell`, `StackedLstm` and `LstmNetwork` are Burn's `src/model.rs` field for field (the combined
`weight_ih`/`weight_hh` Linear layers, Xavier-normal weights, forget-gate biases at 1, `norm_x`,
`norm_h`, `norm_c`, the optional `reverse_lstm`), so the saved `model.mpk` is Burn's record of it.
The data is Burn's `src/dataset.rs` (each value the sum of the two before it plus N(0, 0.1) noise;
1000 train and 200 valid sequences of 10), drawn from a seeded generator here; the loop is Burn's
`src/training.rs` (Adam with per-tensor norm clipping 1.0, lr 1e-3, MSE, 30 epochs of batch 32);
inference prints predicted against expected values, as `src/inference.rs` does.

One of Burn's choices is kept as it is: `LstmCell::forward` builds its state with
`LstmState::new(h_t, c_t)`, whose fields are `(cell, hidden)`, so the state's `hidden` holds the
normalised cell state and the next layer reads that. Porting it otherwise would change the numbers.

    python examples/modern_lstm.py [--epochs 30] [--artifact-dir /tmp/modern-lstm]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

import burnlike
from burnlike.config import config
from burnlike.data import DataLoaderBuilder
from burnlike.data.batch import TensorBatch
from burnlike.data.dataset import InMemDataset
from burnlike.module import Module
from burnlike.nn import (
    DropoutConfig,
    Initializer,
    LayerNormConfig,
    LinearConfig,
    LstmState,
    MseLoss,
    Reduction,
    Sigmoid,
    Tanh,
)
from burnlike.optim import AdamConfig, GradientClippingConfig, GradientsParams
from burnlike.record import CompactRecorder
from burnlike.train import backward

# --- src/model.rs ----------------------------------------------------------------------------------


class LstmCell(Module):
    """LSTM cell with layer normalization: gates [i, f, g, o] from one matrix each for x_t and h_{t-1}."""

    __burn_fields__ = ("hidden_size", "weight_ih", "weight_hh", "norm_x", "norm_h", "norm_c", "dropout")

    def __init__(self, config: LstmCellConfig, device: Any = None) -> None:
        super().__init__()
        initializer = Initializer.XavierNormal(gain=1.0)
        self.hidden_size = config.hidden_size
        self.weight_ih = LinearConfig(config.input_size, 4 * config.hidden_size, initializer=initializer).init(device)
        self.weight_hh = LinearConfig(config.hidden_size, 4 * config.hidden_size, initializer=initializer).init(device)
        with torch.no_grad():  # the forget gate's biases at 1.0 (helps with learning long sequences)
            for linear in (self.weight_ih, self.weight_hh):
                linear.bias[config.hidden_size:2 * config.hidden_size] = 1.0
        self.norm_x = LayerNormConfig(4 * config.hidden_size).init(device)  # gate pre-activations
        self.norm_h = LayerNormConfig(config.hidden_size).init(device)  # hidden state
        self.norm_c = LayerNormConfig(config.hidden_size).init(device)  # cell state
        self.dropout = DropoutConfig(config.dropout).init()

    def forward(self, x: Tensor, state: LstmState) -> LstmState:
        """x `[batch_size, input_size]`, the state's tensors `[batch_size, hidden_size]`."""
        h_prev, c_prev = state.hidden, state.cell
        gates_x = self.weight_ih(x)  # transform the input
        gates_h = self.weight_hh(h_prev)  # transform the previous hidden state
        gates_x = self.norm_x(gates_x)
        gates = gates_x + gates_h
        i_gate, f_gate, g_gate, o_gate = gates.chunk(4, dim=1)
        i_t = Sigmoid.new()(i_gate)
        f_t = Sigmoid.new()(f_gate)
        g_t = Tanh.new()(g_gate)
        o_t = Sigmoid.new()(o_gate)
        c_t = f_t * c_prev + i_t * g_t  # c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t
        c_t = self.norm_c(c_t)
        h_t = o_t * Tanh.new()(c_t)  # h_t = o_t ⊙ tanh(c_t)
        h_t = self.norm_h(h_t)
        h_t = self.dropout(h_t)
        return LstmState.new(h_t, c_t)  # Burn's argument order: `new(cell, hidden)` receives (h_t, c_t)

    def init_state(self, batch_size: int, device: Any = None) -> LstmState:
        cell = torch.zeros(batch_size, self.hidden_size, device=device)
        hidden = torch.zeros(batch_size, self.hidden_size, device=device)
        return LstmState.new(cell, hidden)


@config
class LstmCellConfig:
    input_size: int
    hidden_size: int
    dropout: float

    def init(self, device: Any = None) -> LstmCell:
        return LstmCell(self, device)


class StackedLstm(Module):
    """Stacked LSTM: each layer reads the output of the one before."""

    __burn_fields__ = ("layers",)

    def __init__(self, config: StackedLstmConfig, device: Any = None) -> None:
        super().__init__()
        layers = []
        for i in range(config.num_layers):
            input_size = config.input_size if i == 0 else config.hidden_size
            dropout = config.dropout if i < config.num_layers - 1 else 0.0  # no dropout on the last layer
            layers.append(LstmCellConfig(input_size, config.hidden_size, dropout).init(device))
        self.layers = nn.ModuleList(layers)

    def forward(self, x: Tensor, states: list[LstmState] | None = None) -> tuple[Tensor, list[LstmState]]:
        """x `[batch_size, seq_length, input_size]` → output `[batch_size, seq_length, hidden_size]`
        and each layer's last state."""
        batch_size, seq_length, _ = x.shape
        if states is None:
            states = [layer.init_state(batch_size, x.device) for layer in self.layers]
        layer_outputs = []
        for t in range(seq_length):
            input_t = x[:, t]
            for i, lstm_cell in enumerate(self.layers):
                state = LstmState.new(states[i].cell, states[i].hidden)
                state = lstm_cell(input_t, state)
                input_t = state.hidden
                states[i] = state
            layer_outputs.append(input_t)
        return torch.stack(layer_outputs, 1), states


@config
class StackedLstmConfig:
    input_size: int
    hidden_size: int
    num_layers: int
    dropout: float

    def init(self, device: Any = None) -> StackedLstm:
        return StackedLstm(self, device)


class LstmNetwork(Module):
    """The whole network: forward LSTM, optional reverse LSTM, dropout, a final Linear on the last step."""

    __burn_fields__ = ("stacked_lstm", "reverse_lstm", "dropout", "fc")
    __burn_optional__ = ("reverse_lstm",)  # Burn: `Option<StackedLstm<B>>`

    def __init__(self, config: LstmNetworkConfig, device: Any = None) -> None:
        super().__init__()
        stacked = StackedLstmConfig(config.input_size, config.hidden_size, config.num_layers, config.dropout)
        self.stacked_lstm = stacked.init(device)
        self.register_module("reverse_lstm", stacked.init(device) if config.bidirectional else None)
        hidden_size = 2 * config.hidden_size if config.bidirectional else config.hidden_size
        self.dropout = DropoutConfig(config.dropout).init()
        self.fc = LinearConfig(hidden_size, config.output_size).init(device)

    def forward(self, x: Tensor, states: list[LstmState] | None = None) -> Tensor:
        """x `[batch_size, seq_length, input_size]` → `[batch_size, output_size]`."""
        seq_length = x.shape[1]
        output, _ = self.stacked_lstm(x, states)
        if self.reverse_lstm is not None:
            reverse_output, _ = self.reverse_lstm(x.flip(1), None)  # the sequence read backwards
            output = torch.cat([output, reverse_output.flip(1)], 2)
        output = self.dropout(output)
        fc: Tensor = self.fc(output[:, seq_length - 1])  # the final time step's output
        return fc


@config
class LstmNetworkConfig:
    input_size: int = 1  # one feature (a number sequence)
    hidden_size: int = 32
    num_layers: int = 2
    output_size: int = 1  # predict one number
    dropout: float = 0.1
    bidirectional: bool = True

    def init(self, device: Any = None) -> LstmNetwork:
        return LstmNetwork(self, device)


# --- src/dataset.rs --------------------------------------------------------------------------------
NUM_SEQUENCES = 1000
SEQ_LENGTH = 10
NOISE_LEVEL = 0.1
RANDOM_SEED = 5


@dataclasses.dataclass
class SequenceDatasetItem:
    sequence: list[float]
    target: float

    @classmethod
    def new(cls, seq_length: int, noise_level: float, rng: np.random.Generator) -> SequenceDatasetItem:
        seq = [float(rng.random()), float(rng.random())]
        for _ in range(seq_length):
            seq.append(seq[-2] + seq[-1] + float(rng.normal(0.0, noise_level)))
        return cls(seq[:-1], seq[-1])  # all but the last; the last


class SequenceDataset(InMemDataset):
    def __init__(self, num_sequences: int, seq_length: int, noise_level: float, rng: np.random.Generator) -> None:
        super().__init__([SequenceDatasetItem.new(seq_length, noise_level, rng) for _ in range(num_sequences)])


@dataclasses.dataclass
class SequenceBatch(TensorBatch):
    sequences: Tensor  # [batch_size, seq_length, input_size]
    targets: Tensor  # [batch_size, 1]


class SequenceBatcher:
    def batch(self, items: list[SequenceDatasetItem], device: Any = None) -> SequenceBatch:
        sequences = torch.tensor([item.sequence for item in items], dtype=torch.float32, device=device).unsqueeze(-1)
        targets = torch.tensor([[item.target] for item in items], dtype=torch.float32, device=device)
        return SequenceBatch(sequences, targets)


# --- src/training.rs -------------------------------------------------------------------------------
@config
class TrainingConfig:
    model: LstmNetworkConfig
    optimizer: AdamConfig
    num_epochs: int = 30
    batch_size: int = 32
    num_workers: int = 2
    lr: float = 1e-3


def create_artifact_dir(artifact_dir: str) -> None:
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


def train(artifact_dir: str, config: TrainingConfig, device: str = "cpu",
          num_sequences: int = NUM_SEQUENCES) -> dict[str, list[float]]:
    """Burn's loop on `num_sequences` train sequences (a fifth of that to validate); returns the mean
    train and valid losses of each epoch."""
    create_artifact_dir(artifact_dir)
    config.save(f"{artifact_dir}/config.json")
    burnlike.seed(RANDOM_SEED)
    rng = np.random.default_rng(RANDOM_SEED)  # Burn draws the data from an unseeded thread RNG

    model = config.model.init(device)
    optim = config.optimizer.init()
    batcher = SequenceBatcher()
    dataloader_train = (DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(RANDOM_SEED)
                        .num_workers(config.num_workers).build(SequenceDataset(num_sequences, SEQ_LENGTH,
                                                                               NOISE_LEVEL, rng)))
    dataloader_valid = (DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(RANDOM_SEED)
                        .num_workers(config.num_workers).build(SequenceDataset(num_sequences // 5, SEQ_LENGTH,
                                                                               NOISE_LEVEL, rng)))
    train_num_items, valid_num_items = num_sequences, num_sequences // 5

    print("Starting training...")
    history: dict[str, list[float]] = {"train": [], "valid": []}
    for epoch in range(1, config.num_epochs + 1):
        train_loss = valid_loss = 0.0
        for batch in dataloader_train:
            batch = batch.to(device)
            output = model.forward(batch.sequences, None)
            loss = MseLoss().forward(output, batch.targets, Reduction.Mean)
            train_loss += loss.item() * batch.targets.shape[0]
            grads = GradientsParams.from_grads(backward(loss), model)
            model = optim.step(config.lr, model, grads)
        avg_train_loss = train_loss / train_num_items

        valid_model = model.valid()
        with torch.no_grad():
            for batch in dataloader_valid:
                batch = batch.to(device)
                output = valid_model.forward(batch.sequences, None)
                valid_loss += MseLoss().forward(output, batch.targets, Reduction.Mean).item() * batch.targets.shape[0]
        avg_valid_loss = valid_loss / valid_num_items
        history["train"].append(avg_train_loss)
        history["valid"].append(avg_valid_loss)
        if (epoch + 1) % 5 == 0:
            print(f"Epoch {epoch + 1}/{config.num_epochs}, Avg Loss {avg_train_loss:.4f}, "
                  f"Avg Val Loss: {avg_valid_loss:.4f}")

    model.save_file(f"{artifact_dir}/model", CompactRecorder())
    return history


# --- src/inference.rs ------------------------------------------------------------------------------
def infer(artifact_dir: str, device: str = "cpu") -> tuple[Tensor, Tensor]:
    """The saved model on new sequences: (predicted, expected), the first ten printed."""
    config = TrainingConfig.load(f"{artifact_dir}/config.json")
    model = config.model.init(device).load_file(f"{artifact_dir}/model", CompactRecorder()).valid()
    dataset = SequenceDataset(NUM_SEQUENCES // 5, SEQ_LENGTH, NOISE_LEVEL, np.random.default_rng(RANDOM_SEED + 1))
    batch = SequenceBatcher().batch(list(dataset.items), device)
    with torch.no_grad():
        predicted = model.forward(batch.sequences, None).squeeze(1)
    expected = batch.targets.squeeze(1)
    print(f"{'predicted':>12} {'expected':>12}")
    for p, e in zip(predicted[:10].tolist(), expected[:10].tolist()):
        print(f"{p:12.4f} {e:12.4f}")
    return predicted, expected


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--artifact-dir", default="/tmp/modern-lstm", help="removed first, then the run's files")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--sequences", type=int, default=NUM_SEQUENCES, help="training sequences (valid: a fifth)")
    args = parser.parse_args(argv)
    config = TrainingConfig(LstmNetworkConfig(), AdamConfig(grad_clipping=GradientClippingConfig.Norm(1.0)),
                            num_epochs=args.epochs, num_workers=args.num_workers)
    history = train(args.artifact_dir, config, args.device, args.sequences)
    predicted, expected = infer(args.artifact_dir, args.device)
    return {"history": history, "predicted": predicted, "expected": expected}


if __name__ == "__main__":
    main()
