"""`examples/simple_regression.py`, Burn's simple regression example: it runs as a script (--help),
splits a table 80/10/10 into SQLite in Burn's layout (a table per split), learns far better than
predicting the mean, and reads scikit-learn's diabetes table when no CSV is given."""

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.examples.helpers import example, run_with_help


def write_linear_csv(path: Path, n: int = 200) -> Path:
    """`n` rows of a, b and y = 3a - 2b + 50 plus a little noise: a linear model can fit it."""
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 10, n), rng.uniform(0, 10, n)
    y = 3 * a - 2 * b + 50 + rng.normal(0, 0.5, n)
    path.write_text("a,b,y\n" + "".join(f"{x:.4f},{z:.4f},{t:.4f}\n" for x, z, t in zip(a, b, y)))
    return path


def test_simple_regression_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("simple_regression", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: simple_regression.py") and "Burn" in out and "--epochs" in out


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
