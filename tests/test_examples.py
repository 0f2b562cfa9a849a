"""Burn's examples in Python (examples/*.py), each run on small data made here: a custom training
loop on tiny MNIST files, a regression from SQLite, an image folder through the CNN, and a
transformer on a text folder; and each script's --help, run as `__main__`."""

import importlib.util
import runpy
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from idx import write_mnist_idx
from images import write_image_folder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["custom_training_loop", "simple_regression", "custom_image_dataset", "text_classification"]


def example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_is_a_script_with_help(name, capsys, monkeypatch):
    """Run as `__main__` (what `python examples/<name>.py --help` does, in this process: no start-up cost)."""
    monkeypatch.setattr(sys, "argv", [f"examples/{name}.py", "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "examples" / f"{name}.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.startswith(f"usage: {name}.py") and "Burn" in out and "--epochs" in out


def test_custom_training_loop(tmp_path, capsys):
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


def write_linear_csv(path: Path, n: int = 200) -> Path:
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 10, n), rng.uniform(0, 10, n)
    y = 3 * a - 2 * b + 50 + rng.normal(0, 0.5, n)
    path.write_text("a,b,y\n" + "".join(f"{x:.4f},{z:.4f},{t:.4f}\n" for x, z, t in zip(a, b, y)))
    return path


def test_simple_regression_learns_from_its_sqlite_splits(tmp_path, capsys):
    csv = write_linear_csv(tmp_path / "linear.csv")
    result = example("simple_regression").main([
        "--csv", str(csv), "--target", "y", "--epochs", "12", "--batch-size", "16", "--learning-rate", "0.01",
        "--num-workers", "0", "--artifact-dir", str(tmp_path / "run")])
    assert result["test_rmse"] < 0.3 * result["baseline_rmse"]  # far better than predicting the mean
    out = capsys.readouterr().out
    assert "Train Dataset Size: 160" in out and "Valid Dataset Size: 20" in out and "Test split (20 rows)" in out
    tables = sqlite3.connect(tmp_path / "run" / "dataset.db").execute(
        "select name from sqlite_master where type = 'table' and name not like 'sqlite_%'").fetchall()
    assert sorted(t[0] for t in tables) == ["test", "train", "validation"]  # Burn's table per split
    assert (tmp_path / "run" / "model.bin").exists() and (tmp_path / "run" / "config.json").exists()


def test_simple_regression_reads_the_diabetes_table(tmp_path, capsys):
    pytest.importorskip("sklearn")
    result = example("simple_regression").main(["--epochs", "1", "--num-workers", "0",
                                                "--artifact-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "Train Dataset Size: 354" in out and "Valid Dataset Size: 44" in out and "Test split (44 rows)" in out
    assert result["baseline_rmse"] > 0


def test_custom_image_dataset(tmp_path):
    write_image_folder(tmp_path / "data" / "train", classes=3, per_class=8)
    write_image_folder(tmp_path / "data" / "test", classes=3, per_class=2, seed=1)
    best = example("custom_image_dataset").main([
        "--data", str(tmp_path / "data"), "--epochs", "1", "--batch-size", "8", "--num-workers", "0",
        "--artifact-dir", str(tmp_path / "run")])
    assert 0 <= best <= 100
    assert (tmp_path / "run" / "model.mpk").exists() and (tmp_path / "run" / "checkpoint" / "model-1.mpk").exists()
    with pytest.raises(Exception, match="image folder .*missing/train not found"):
        example("custom_image_dataset").main(["--data", str(tmp_path / "missing"), "--artifact-dir",
                                              str(tmp_path / "run2")])


def write_texts(root: Path, per_class: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    words = {"sports": ["goal", "match", "team", "score"], "weather": ["rain", "storm", "sunny", "cloud"]}
    for label, vocab in words.items():
        (root / label).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            (root / label / f"{i}.txt").write_text(" ".join(rng.choice(vocab, 6)) + " today")
    return root


@pytest.mark.slow
def test_text_classification(tmp_path):
    write_texts(tmp_path / "data" / "train", 12, 0)
    write_texts(tmp_path / "data" / "test", 3, 1)
    text = example("text_classification")
    out = text.main(["--data", str(tmp_path / "data"), "--epochs", "1", "--batch-size", "8", "--seq-length", "48",
                     "--d-model", "32", "--d-ff", "64", "--heads", "2", "--layers", "1", "--train-samples", "64",
                     "--test-samples", "16", "--artifact-dir", str(tmp_path / "run")])
    assert len(out["predicted"]) == 3 and set(out["predicted"]) <= {"sports", "weather"}
    assert out["expected"] == ["sports"] * 3  # the first test texts, in path order
    assert (tmp_path / "run" / "model.mpk").exists()
    lr_log = (tmp_path / "run" / "train" / "epoch-1" / "Learning_Rate.log").read_text().split()
    assert len(lr_log) == 8 and float(lr_log[1].split(",")[0]) > float(lr_log[0].split(",")[0])  # Noam warm-up
    csv = tmp_path / "news.csv"
    csv.write_text("class,description\nsports,goal\nweather,rain\n")
    args = text.argparse.Namespace(data=None, train_csv=str(csv), test_csv=str(csv), text_column="description",
                                   label_column="class")
    train, test = text.load(args)
    assert train.classes == ["sports", "weather"] and [i.label for i in test.items] == [0, 1]
