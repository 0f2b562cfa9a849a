"""`burnlike.cli_runs`: `burnlike compare` and `burnlike summary` on real run dirs. compare ranks a
sweep's jobs by their best optimized metric (its direction) with their overrides and can write one
plot; summary prints Burn's learner summary of a run and writes its metrics.png; both name a path that
is no run (status 2)."""

import json
import os
import subprocess
import sys

import pytest

from burnlike.cli import main
from tests.helpers.idx import write_mnist_idx
from tests.helpers.paths import REPO


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A real 2-job Hydra sweep (learning rates far apart, so the jobs' best accuracies differ)."""
    tmp = tmp_path_factory.mktemp("sweep")
    tiny = write_mnist_idx(tmp / "mnist", n_train=64, n_test=32)
    env = {**os.environ, "BURNLIKE_DATA": str(tiny), "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(REPO / "train.py"), "-m", "model=mlp", "optimizer.lr=1e-1,1e-6",
                           "learner.num_epochs=2", "learner.progress_bar=false", f"hydra.sweep.dir={tmp}/multirun"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return tmp / "multirun"


def test_compare_ranks_a_sweeps_jobs_by_their_best_metric_and_writes_one_plot(sweep, tmp_path, capsys):
    assert main(["compare", str(sweep), "--plot", str(tmp_path / "cmp.png")]) == 0
    out = capsys.readouterr().out
    best = {job: json.loads((sweep / job / "result.json").read_text())["value"] for job in ("0", "1")}
    lines = [line for line in out.splitlines() if line[:1].isdigit()]
    assert len(lines) == 2
    order = sorted(best, key=lambda j: -best[j])  # valid/Accuracy: higher is better
    for rank, (job, line) in enumerate(zip(order, lines), 1):
        assert line.startswith(f"{rank}  {sweep / job}") and f"{best[job]:.4f}" in line
    assert "optimizer.lr=0.1" in out and "optimizer.lr=1e-06" in out and "valid/Accuracy (best)" in out
    assert (tmp_path / "cmp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == [tmp_path / "cmp.png"]


def test_compare_writes_its_plot_into_the_sweep_dir_not_the_current_directory(sweep, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (sweep / "compare.png").unlink(missing_ok=True)
    assert main(["compare", str(sweep)]) == 0
    assert f"plot: {sweep / 'compare.png'}" in capsys.readouterr().out
    assert (sweep / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == []
    assert main(["compare", str(sweep / "0"), str(sweep / "1")]) == 0  # run dirs: the folder they share
    assert f"plot: {sweep / 'compare.png'}" in capsys.readouterr().out


def test_summary_prints_the_table_and_writes_metrics_png(sweep, capsys):
    run = sweep / "0"
    (run / "metrics.png").unlink(missing_ok=True)
    assert main(["summary", str(run)]) == 0
    out = capsys.readouterr().out
    assert "Total Epochs: 2" in out and "| Valid | Accuracy |" in out and "| Train | Loss     |" in out
    assert (run / "metrics.png").is_file()


def test_compare_and_summary_name_a_path_that_is_no_run(tmp_path, capsys):
    assert main(["compare", str(tmp_path)]) == 2
    assert f"{tmp_path}: no result.json" in capsys.readouterr().err
    assert main(["summary", str(tmp_path)]) == 2
    assert f"{tmp_path}: not a run dir" in capsys.readouterr().err
