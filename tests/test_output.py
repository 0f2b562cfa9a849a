"""What a person reads: the guide's output off a terminal (no bars, no carriage returns, epochs
from 1), the live view in a pseudo-terminal, and no messages from underneath that don't apply."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from idx import write_mnist_idx

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=64, n_test=32)


def guide_env(tiny):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}  # every warning shows
    return {**env, "BURNLIKE_DATA": str(tiny)}


def test_guide_to_a_file_is_short_plain_and_counts_epochs_from_1(tiny, tmp_path):
    run = tmp_path / "run"
    with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.run([sys.executable, str(ROOT / "train.py"), "learner.num_epochs=2",
                               f"hydra.run.dir={run}"], cwd=ROOT, env=guide_env(tiny), stdout=out, stderr=err,
                              timeout=300)
    stdout, stderr = (tmp_path / "stdout.txt").read_text(), (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 0, stderr
    assert "\r" not in stdout and "\x1b[" not in stdout
    assert len(stdout.splitlines()) < 50, stdout
    lines = stdout.splitlines()
    for epoch in (1, 2):
        assert any(line.startswith(f"epoch {epoch}/2 train Accuracy=") and line.endswith("it/s") for line in lines)
        assert any(line.startswith(f"epoch {epoch}/2 valid Accuracy=") for line in lines)
    assert not any(line.startswith("epoch 0") or "Epoch 0" in line for line in lines)
    # 4: no messages from underneath that don't apply, in stderr or experiment.log
    log = (run / "experiment.log").read_text()
    for text in (stderr, log, stdout):
        for noise in ("weights_only", "litlogger", "litmodels", "LeafSpec", "shuffling enabled", "Warning"):
            assert noise not in text, (noise, text)
    assert stderr.strip() == "", stderr
    assert "epoch 2 valid: Accuracy=" in log  # burnlike's own lines stay
