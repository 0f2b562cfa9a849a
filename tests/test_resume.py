import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from toy import Classifier

from burnlike.record import DefaultRecorder

SCRIPT = Path(__file__).parent / "killable_train.py"


def run(artifact: Path, mode: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, str(SCRIPT), str(artifact), mode], capture_output=True, text=True,
                          timeout=240, env=env)


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_sigkill_mid_epoch_then_resume_matches_an_uninterrupted_run(tmp_path):
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(killed), "kill"], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.stdout.readline().strip() == "blocked"  # inside epoch 3, after model-2 was saved
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sorted(p.name for p in (killed / "checkpoint").glob("trainer-*")) == ["trainer-1.mpk", "trainer-2.mpk"]
    resumed = run(killed, "resume=2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (killed / "checkpoint" / "model-4.mpk").exists()

    straight = run(tmp_path / "straight", "plain")
    assert straight.returncode == 0, straight.stderr[-3000:]
    a = Classifier().load_file(killed / "final.mpk", DefaultRecorder())
    b = Classifier().load_file(tmp_path / "straight" / "final.mpk", DefaultRecorder())
    assert torch.equal(a.linear.weight, b.linear.weight) and torch.equal(a.linear.bias, b.linear.bias)
