"""TODO: docstring."""

import runpy
import sys

import pytest
import torch

from tests.examples.helpers import example
from tests.helpers.idx import write_mnist_idx
from tests.helpers.paths import REPO

EXAMPLES = ["custom_training_loop", "simple_regression", "custom_image_dataset", "text_classification"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_as_a_script_with_help(name, capsys, monkeypatch):
    """Run as `__main__` (what `python examples/<name>.py --help` does, in this process: no start-up cost)."""
    monkeypatch.setattr(sys, "argv", [f"examples/{name}.py", "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(REPO / "examples" / f"{name}.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.startswith(f"usage: {name}.py") and "Burn" in out and "--epochs" in out


def test_custom_training_loop_trains_and_logs_every_iteration(tmp_path, capsys):
    write_mnist_idx(tmp_path, n_train=96, n_test=32)
    loop = example("custom_training_loop")
    model, accuracy = loop.main(["--data", str(tmp_path), "--epochs", "2", "--batch-size", "16", "--num-workers", "0",
                                 "--grads-accumulation", "2"])
    out = capsys.readouterr().out
    assert "[Train - Epoch 1 - Iteration 0] Loss " in out and "[Train - Epoch 2 - Iteration 5]" in out
    assert "[Valid - Epoch 2 - Iteration 1] Loss " in out and 0 <= accuracy <= 100
    import burnlike
    from burnlike.models.mnist import ModelConfig

    burnlike.seed(42)
    untrained = ModelConfig(10, 1024).init("cpu")
    assert not torch.equal(untrained.linear2.weight, model.linear2.weight)  # the optimizer stepped it
    assert loop.accuracy(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), torch.tensor([1, 1])) == 50.0
