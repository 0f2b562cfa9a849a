"""Signals to a running training, as a cluster's scheduler sends them, and the resume after them: a
catchable signal (SIGUSR1, SIGTERM) saves a `preempted-<step>` checkpoint at the next step and stops,
chaining to the program's own handler; `checkpoint=last` resumes from it to the very weights of an
uninterrupted run. After a SIGKILL (nothing saved) a resume from the last epoch checkpoint matches too.
The app stopped by SIGTERM mid-epoch and resumed, under every trainer group: test_resume_anywhere.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from burnlike.record import DefaultRecorder, load_checkpoint
from burnlike.train.checkpoint import newest_checkpoint
from burnlike.train.preemption import Preempted
from tests.helpers.fit import SignalAfter, cpu_builder, fit, same_weights
from tests.helpers.idx import write_mnist_idx
from tests.helpers.paths import HELPERS
from tests.helpers.toy import Classifier
from tests.journeys.helpers import finish, run_helper_script, start_app


@pytest.fixture
def own_sigusr1_handler():
    """A handler of the program's own for SIGUSR1 (it lists the signals it got), restored after the test."""
    calls = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: calls.append(signum))
    yield calls
    signal.signal(signal.SIGUSR1, previous)


def test_a_signal_mid_epoch_saves_preempted_and_last_resumes_exactly(tmp_path, own_sigusr1_handler, capsys):
    straight = fit(cpu_builder(tmp_path / "straight"))
    handler = signal.getsignal(signal.SIGUSR1)
    run = tmp_path / "run"
    # 4 steps per epoch: the signal arrives after step 5, the next step (6) saves and stops
    with pytest.raises(Preempted) as stopped:
        fit(cpu_builder(run).callback(SignalAfter(5, signal.SIGUSR1)))
    assert stopped.value.code == 128 + signal.SIGUSR1
    assert own_sigusr1_handler == [signal.SIGUSR1]  # the program's handler ran too (chained)
    assert signal.getsignal(signal.SIGUSR1) is handler  # and is installed again after the run
    assert "preempted by SIGUSR1 at epoch 2, step 6" in capsys.readouterr().err
    names = sorted(p.name for p in (run / "checkpoint").iterdir())
    assert "preempted-6.mpk" in names and "trainer-1.mpk" in names and "trainer-2.mpk" not in names
    assert newest_checkpoint(run, "mpk") == run / "checkpoint" / "preempted-6.mpk"
    resumed = fit(cpu_builder(run).checkpoint("last"))
    assert same_weights(resumed, straight)  # batches 5 and 6 were not trained twice
    assert newest_checkpoint(run, "mpk") == run / "checkpoint" / "trainer-2.mpk"


# 256 digits in batches of 32: 8 steps an epoch. SIGTERM after step 5 (saved at 6, mid-epoch 1), 14 (saved
# at 15, epoch 2's last batches) and 16 (epoch 2's last step: it stops in epoch 2's validation)
PREEMPT_AT = {5: "checkpoint saved", 14: "checkpoint saved", 16: "during epoch 2's validation"}
SHORT_ARGS = ["model=mlp", "model.hidden_sizes=[16]", "data.batch_size=32", "learner.num_epochs=3"]


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_a_resumed_app_run_shows_no_resumability_warning_at_any_preemption_point(tmp_path):
    """Lightning warns "your dataloader is not resumable" on a mid-epoch resume unless the loader has
    its state_dict interface; the app's loaders continue exactly (same order, past the trained
    batches), so the console must not show it, wherever the run was stopped."""
    data = write_mnist_idx(tmp_path / "mnist", n_train=256, n_test=64)
    shown = {"PYTHONWARNINGS": "default"}  # every warning a user would see
    cut = {step: start_app([str(step), *SHORT_ARGS], tmp_path / str(step), data,
                           script=HELPERS / "app_signal_at.py") for step in PREEMPT_AT}
    for step, proc in cut.items():
        stopped = finish(proc, timeout=300)
        assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
        assert PREEMPT_AT[step] in stopped.stderr, stopped.stderr[-3000:]
    resumed = {step: start_app([*SHORT_ARGS, "learner.checkpoint=last"], tmp_path / str(step), data, env_extra=shown)
               for step in PREEMPT_AT}
    for step, proc in resumed.items():
        done = finish(proc, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "not resumable" not in done.stdout + done.stderr, (step, done.stderr[-3000:])
        assert (tmp_path / str(step) / "run" / "model.mpk").exists()


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_sigkill_mid_epoch_then_resume_matches_an_uninterrupted_run(tmp_path):
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(HELPERS / "killable_train.py"), str(killed), "kill"],
                            stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.stdout.readline().strip() == "blocked"  # inside epoch 3, after model-2 was saved
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sorted(p.name for p in (killed / "checkpoint").glob("trainer-*")) == ["trainer-1.mpk", "trainer-2.mpk"]
    resumed = run_helper_script("killable_train.py", killed, "resume=2", timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (killed / "checkpoint" / "model-4.mpk").exists()

    straight = run_helper_script("killable_train.py", tmp_path / "straight", "plain", timeout=240)
    assert straight.returncode == 0, straight.stderr[-3000:]
    a = Classifier().load_file(killed / "final.mpk", DefaultRecorder())
    b = Classifier().load_file(tmp_path / "straight" / "final.mpk", DefaultRecorder())
    assert torch.equal(a.linear.weight, b.linear.weight) and torch.equal(a.linear.bias, b.linear.bias)


# --- signals at random moments of a DDP job ------------------------------------------------------------
DDP_ARGS = ["model=mlp", "model.hidden_sizes=[16]", "data.batch_size=16", "learner.recorder=default",
            "learner.num_epochs=50", "learner.summary=false", "trainer=ddp", "trainer.devices=2",
            "trainer.accelerator=cpu", "logger.kinds=[]"]
# 8 SIGTERMs to the launcher; SIGUSR1 and a SIGTERM to every rank 4 times each: 16 DDP jobs (20 each
# with BURNLIKE_SIGNAL_TRIES=20: 60 jobs, about 12 minutes on 2 cores). Each kind's moments are spread
# over the whole window (one in each of its equal slices), so a few tries reach every part of it.
_MORE = int(os.environ.get("BURNLIKE_SIGNAL_TRIES", "4"))
KINDS = {("launcher", signal.SIGTERM): max(8, _MORE), ("launcher", signal.SIGUSR1): _MORE,
         ("every rank", signal.SIGTERM): _MORE}
WINDOW = 1.5  # seconds after the first epoch's checkpoint: the epochs after the first


def moments(rng, tries: int) -> list[float]:
    """`tries` moments in [0, WINDOW), one at a random place in each of `tries` equal slices, shuffled."""
    spread = [(k + rng.random()) * WINDOW / tries for k in range(tries)]
    rng.shuffle(spread)
    return spread


def _live_rank(process) -> bool:
    """A training rank still running: a zombie has exited (no one reaps an orphan in a container
    without an init), and a pid may already belong to something else."""
    import psutil

    try:
        return process.status() != psutil.STATUS_ZOMBIE and "train.py" in " ".join(process.cmdline())
    except psutil.Error:  # gone between the two questions
        return False


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_signals_at_random_moments_of_a_ddp_job_always_stop_it_within_30_s_with_a_resumable_checkpoint(
        tmp_path_factory):
    """A scheduler signals the job's first process (or all of them) at any moment, in training or in
    a validation: every rank stops within 30 s, the job's status is 128 + the signal, its newest
    checkpoint loads, and no rank is left behind (a collective left waiting would hang the job)."""
    import random

    import psutil

    data = write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=512, n_test=128)
    rng = random.Random(30)
    tries = [(kind, moment) for kind, n in KINDS.items() for moment in moments(rng, n)]
    for i, ((whom, signum), moment) in enumerate(tries):
        out = tmp_path_factory.mktemp(f"try{i}")
        proc = start_app(DDP_ARGS, out, data)
        try:
            first = out / "run" / "checkpoint" / "trainer-1.mpk"
            while not first.exists() and proc.poll() is None:  # bounded by the test's timeout
                time.sleep(0.005)
            assert first.exists(), proc.communicate()[1][-3000:]
            time.sleep(moment)  # the moment: anywhere in the epochs after the first
            ranks = psutil.Process(proc.pid).children(recursive=True)
            for target in ([proc.pid] if whom == "launcher" else [proc.pid, *(r.pid for r in ranks)]):
                os.kill(target, signum)
            signalled = time.monotonic()
            stdout, stderr = proc.communicate(timeout=60)
            took = time.monotonic() - signalled
        finally:
            proc.kill()
        assert proc.returncode == 128 + signum and took < 30, (i, whom, signum, proc.returncode, took, stderr[-3000:])
        ranks = [r for r in ranks if _live_rank(r)]
        _, alive = psutil.wait_procs(ranks, timeout=10)  # their exit may trail the launcher's by a moment
        alive = [r for r in alive if _live_rank(r)]
        assert not alive, (i, whom, signum, "a rank is left", alive)
        newest = newest_checkpoint(out / "run", "mpk")
        assert newest is not None and load_checkpoint(newest)["global_step"] >= 512 // 16 // 2  # one epoch or more
