"""`examples/guide.py`, Burn's book guide: it runs as a script (--help) and, on a small MNIST, writes
the guide's artifacts (its config as Burn's JSON, per-epoch checkpoints, the model record) and
learns."""

import sys

import torch

from burnlike.models.mnist import ModelConfig
from burnlike.optim import AdamConfig
from tests.examples.helpers import example, run_with_help
from tests.helpers.idx import write_mnist_idx


def test_guide_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("guide", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: guide.py")
    assert all(flag in out for flag in ("--artifact-dir", "--epochs", "--device", "--num-workers"))


def test_the_guide_trains_saves_its_config_checkpoints_and_model_and_learns(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BURNLIKE_DATA", str(write_mnist_idx(tmp_path / "data", n_train=512, n_test=128)))
    guide = example("guide")
    config = guide.TrainingConfig(ModelConfig(10, 32), AdamConfig(), num_epochs=2, batch_size=32, num_workers=0,
                                  learning_rate=1e-3)
    run = tmp_path / "guide"
    (run / "stale").mkdir(parents=True)  # the guide starts from an empty artifact dir
    best = guide.train(str(run), config, "cpu")
    assert 50.0 < best <= 100.0  # ten bars at ten heights: far above chance (10%)
    assert guide.TrainingConfig.load(run / "config.json") == config
    assert not (run / "stale").exists()
    assert {p.name for p in (run / "checkpoint").iterdir()} >= {"model-1.mpk", "model-2.mpk"}
    final = ModelConfig(10, 32).init("cpu").load_file(run / "model.mpk", guide.CompactRecorder()).state_dict()
    last = ModelConfig(10, 32).init("cpu").load_file(run / "checkpoint" / "model-2.mpk", guide.CompactRecorder())
    assert all(torch.equal(final[k], v) for k, v in last.state_dict().items())  # the trained model, saved
    assert "Accuracy" in capsys.readouterr().out  # the learner's summary table


def test_the_guide_main_takes_its_options(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BURNLIKE_DATA", str(write_mnist_idx(tmp_path / "data", n_train=64, n_test=32)))
    monkeypatch.setattr(sys, "argv", ["guide.py", "--artifact-dir", str(tmp_path / "run"), "--epochs", "1",
                                      "--num-workers", "0"])
    example("guide").main()
    out = capsys.readouterr().out
    assert "best valid accuracy:" in out and (tmp_path / "run" / "checkpoint" / "model-1.mpk").exists()

