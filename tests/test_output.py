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


@pytest.mark.slow
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


@pytest.mark.slow
def test_live_view_shows_in_a_pseudo_terminal(tiny, tmp_path):
    import pty
    import re

    main, child = pty.openpty()
    env = {**guide_env(tiny), "COLUMNS": "120", "LINES": "40", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "train.py"), "model=mlp", "learner.num_epochs=2",
                             f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, env=env, stdin=child, stdout=child,
                            stderr=child, close_fds=True)
    os.close(child)
    out = bytearray()
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out.extend(data)
    os.close(main)
    assert proc.wait(timeout=300) == 0, out.decode(errors="replace")[-3000:]
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))
    assert "burnlike" in text and "Epoch 2/2" in text and "Epoch 0" not in text and "Epoch 3/2" not in text
    assert re.search(r"train \d+/\d+ · [\d.,]+ it/s · ETA \d:\d\d:\d\d", text)
    assert "valid per epoch" in text and re.search(r"Accuracy\s+│\s+[\d.]+%", text)
    assert re.search(r"[▁▂▃▄▅▆▇█]{2}", text)  # an epoch plot with both epochs
    assert "│" in text and "╭" in text  # drawn as a panel, not printed as log lines
