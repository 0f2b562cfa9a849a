"""`examples/custom_learning_strategy.py`, Burn's custom-learning-strategy example: it runs as a
script (--help), its own loop trains the guide's model, and the run leaves what Burn's leaves: the
metric logs, the learning checkpointer's three files per epoch, the summary and `model.bin`."""

import logging

from burnlike.models.mnist import ModelConfig
from burnlike.record import NoStdTrainingRecorder
from tests.examples.helpers import example, run_with_help
from tests.helpers.idx import write_mnist_idx


def test_custom_learning_strategy_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("custom_learning_strategy", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: custom_learning_strategy.py") and "--train-items" in out


def test_the_custom_loop_trains_logs_checkpoints_and_saves_the_model(tmp_path, capsys, caplog):
    write_mnist_idx(tmp_path, n_train=96, n_test=16)
    run = tmp_path / "run"
    with caplog.at_level(logging.INFO, logger="example_custom_learning_strategy"):
        result = example("custom_learning_strategy").main([
            "--data", str(tmp_path), "--epochs", "2", "--train-items", "64", "--valid-items", "32",
            "--batch-size", "16", "--num-workers", "0", "--artifact-dir", str(run)])
    iterations = [r.getMessage() for r in caplog.records if "of my custom learning strategy" in r.getMessage()]
    assert iterations == [f"Iteration {i} of my custom learning strategy" for _ in range(2) for i in range(1, 5)]
    assert sorted(p.name for p in (run / "checkpoint").iterdir()) == [
        f"{kind}-{n}.mpk" for kind in ("model", "optim", "scheduler") for n in (1, 2)]
    for split, steps in (("train", 4), ("valid", 2)):
        for epoch in (1, 2):
            lines = (run / split / f"epoch-{epoch}" / "Accuracy.log").read_text().splitlines()
            assert len(lines) == steps and all(line.endswith(",16") for line in lines)
    assert "Learner Summary" in capsys.readouterr().out
    assert result.summary.total_epochs == 2 and result.trainer is None
    saved = ModelConfig(10, 1024).init("cpu").load_file(run / "model", NoStdTrainingRecorder())
    for a, b in zip(saved.state_dict().values(), result.model.state_dict().values()):
        assert (a == b).all()
