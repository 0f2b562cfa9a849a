import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from burnlike.train.logger import read_metric_log

HERE = Path(__file__).parent


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_two_process_cpu_ddp_syncs_metrics_and_rank0_writes_logs(tmp_path):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(HERE / "ddp_learner.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=280, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [(tmp_path / f"group{r}.txt").read_text() for r in (0, 1)] == ["ended", "ended"]
    # metric values are reduced across ranks: both processes log the same epoch value
    assert ranks[0]["valid/Accuracy"] == pytest.approx(ranks[1]["valid/Accuracy"])
    assert ranks[0]["valid/Loss"] == pytest.approx(ranks[1]["valid/Loss"])
    # the log file holds rank 0's steps only (half the valid set: 2 batches of 32)
    lines = (tmp_path / "valid" / "epoch-2" / "Accuracy.log").read_text().splitlines()
    assert len(lines) == 2
    # rank 0's own mean differs from the synced value (the other half of the data counts too)
    local_loss = read_metric_log(tmp_path / "valid" / "epoch-2" / "Loss.log")
    assert local_loss is not None and local_loss != pytest.approx(ranks[0]["valid/Loss"], rel=1e-6)


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_one_ranks_interrupter_stops_every_rank_at_the_same_step(tmp_path):
    """Only rank 1 is told to stop (after step 2): the interrupter's stop is reduced across ranks, so
    rank 0 stops at that step too instead of waiting forever in the next gradient all-reduce."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(HERE / "ddp_learner.py"), str(tmp_path), "interrupt"],
                          capture_output=True, text=True, timeout=280, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = [json.loads((tmp_path / f"rank{r}.json").read_text())["global_step"] for r in (0, 1)]
    assert steps == [3, 3]  # 6 steps without the stop (2 epochs of 3)
    assert "Training interrupted: rank 1 asked (after step 3)" in (tmp_path / "experiment.log").read_text()
