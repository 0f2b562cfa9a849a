"""`examples/custom_training_loop.py`, the Burn book's custom training loop without the Learner:
it runs as a script (--help), trains on MNIST with gradient accumulation (the optimizer steps the
weights), logs every train and valid iteration as Burn's example does, and computes accuracy."""

import torch

import burnlike
from burnlike.models.mnist import ModelConfig
from tests.examples.helpers import example, run_with_help
from tests.helpers.idx import write_mnist_idx


def test_custom_training_loop_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("custom_training_loop", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: custom_training_loop.py") and "Burn" in out and "--epochs" in out


def test_custom_training_loop_trains_and_logs_every_iteration(tmp_path, capsys):
    write_mnist_idx(tmp_path, n_train=96, n_test=32)
    loop = example("custom_training_loop")
    model, accuracy = loop.main(["--data", str(tmp_path), "--epochs", "2", "--batch-size", "16", "--num-workers", "0",
                                 "--grads-accumulation", "2"])
    out = capsys.readouterr().out
    assert "[Train - Epoch 1 - Iteration 0] Loss " in out and "[Train - Epoch 2 - Iteration 5]" in out
    assert "[Valid - Epoch 2 - Iteration 1] Loss " in out and 0 <= accuracy <= 100
    burnlike.seed(42)
    untrained = ModelConfig(10, 1024).init("cpu")
    assert not torch.equal(untrained.linear2.weight, model.linear2.weight)  # the optimizer stepped it
    assert loop.accuracy(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), torch.tensor([1, 1])) == 50.0
