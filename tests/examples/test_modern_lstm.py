"""`examples/modern_lstm.py`, Burn's modern-lstm example: it runs as a script (--help); its model is
Burn's `model.rs` field for field (the record's structure, the forget-gate biases, the optional reverse
LSTM in bincode), its data follows Burn's `dataset.rs` formula, and a few epochs of Burn's loop lower
the loss and save a model that inference loads back."""

import msgpack
import numpy as np
import pytest
import torch

from burnlike.record import BinFileRecorder
from tests.examples.helpers import example, run_with_help


def test_modern_lstm_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("modern_lstm", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: modern_lstm.py") and "Burn" in out and "--epochs" in out


def test_the_model_is_burns_struct(tmp_path):
    lstm = example("modern_lstm")
    network = lstm.LstmNetworkConfig().init()
    assert lstm.LstmNetworkConfig().to_dict() == {"input_size": 1, "hidden_size": 32, "num_layers": 2,
                                                  "output_size": 1, "dropout": 0.1, "bidirectional": True}
    path = network.save_file(tmp_path / "model", lstm.CompactRecorder())
    item = msgpack.unpackb(path.read_bytes(), raw=False)["item"]
    assert list(item) == ["stacked_lstm", "reverse_lstm", "dropout", "fc"]
    cell = item["stacked_lstm"]["layers"][1]
    assert list(cell) == ["hidden_size", "weight_ih", "weight_hh", "norm_x", "norm_h", "norm_c", "dropout"]
    assert cell["weight_ih"]["weight"]["param"]["shape"] == [32, 128] and cell["norm_x"]["gamma"]["param"]["shape"] == [128]
    assert item["fc"]["weight"]["param"]["shape"] == [64, 1]
    first = network.stacked_lstm.layers[0]
    assert first.weight_ih.bias[32:64].eq(1.0).all() and first.weight_hh.bias[32:64].eq(1.0).all()  # forget gate
    assert first.dropout.p == 0.1 and network.stacked_lstm.layers[1].dropout.p == 0.0  # none on the last layer
    one_way = lstm.LstmNetworkConfig(bidirectional=False).init()
    assert msgpack.unpackb(one_way.save_file(tmp_path / "one", lstm.CompactRecorder()).read_bytes())["item"][
        "reverse_lstm"] is None
    sizes = [m.save_file(tmp_path / n, BinFileRecorder()).stat().st_size for n, m in (("two", network), ("one", one_way))]
    assert sizes[0] > sizes[1]  # Option<StackedLstm>: Some(record) against None
    copy = lstm.LstmNetworkConfig().init().load_file(tmp_path / "two.bin", BinFileRecorder())
    assert torch.equal(copy.reverse_lstm.layers[0].weight_hh.weight, network.reverse_lstm.layers[0].weight_hh.weight)


def test_a_cell_keeps_burns_state_order():
    """`LstmState::new(h_t, c_t)` with fields `(cell, hidden)`: `hidden` holds the normalised cell state."""
    lstm = example("modern_lstm")
    cell = lstm.LstmCellConfig(3, 4, 0.0).init()
    x, state = torch.randn(2, 3), cell.init_state(2)
    out = cell(x, state)
    gates = cell.norm_x(cell.weight_ih(x)) + cell.weight_hh(state.hidden)
    i, f, g, o = gates.chunk(4, dim=1)
    c_t = cell.norm_c(torch.sigmoid(f) * state.cell + torch.sigmoid(i) * torch.tanh(g))
    torch.testing.assert_close(out.hidden, c_t)
    torch.testing.assert_close(out.cell, cell.norm_h(torch.sigmoid(o) * torch.tanh(c_t)))


def test_sequences_follow_burns_formula():
    """dataset.rs: each value is the sum of the two before it plus N(0, 0.1) noise; the target is the last."""
    lstm = example("modern_lstm")
    items = lstm.SequenceDataset(500, 10, 0.1, np.random.default_rng(0)).items
    assert all(len(item.sequence) == 11 for item in items)
    residuals = [item.target - item.sequence[-1] - item.sequence[-2] for item in items]
    residuals += [s[k] - s[k - 1] - s[k - 2] for s in (item.sequence for item in items) for k in range(2, 11)]
    assert abs(np.std(residuals) - 0.1) < 0.01 and abs(np.mean(residuals)) < 0.01
    batch = lstm.SequenceBatcher().batch(items[:4])
    assert batch.sequences.shape == (4, 11, 1) and batch.targets.shape == (4, 1)


@pytest.mark.slow
def test_training_lowers_the_loss_and_inference_loads_the_model(tmp_path):
    lstm = example("modern_lstm")
    out = lstm.main(["--epochs", "3", "--sequences", "160", "--num-workers", "0", "--artifact-dir", str(tmp_path)])
    train, valid = out["history"]["train"], out["history"]["valid"]
    assert len(train) == 3 and train[2] < train[0] and valid[2] < valid[0]
    assert (tmp_path / "model.mpk").exists() and (tmp_path / "config.json").exists()
    assert out["predicted"].shape == out["expected"].shape == (200,)
