"""Resume anything, anywhere: `train.py` under every way the app places a run, stopped and resumed
as a cluster stops and requeues it, each compared with an uninterrupted run.

- Every trainer config group value (conf/trainer: cpu, ddp, ddp_spawn, fsdp) at one and two
  processes, stopped by SIGTERM in the middle of epoch 2 and resumed with `learner.checkpoint=last`,
  ends with the weights, the results and the epoch log lines of the uninterrupted run, exactly (full
  precision). `ddp_spawn` runs at two processes only: at one it is the same launcher (each spawned
  run costs three interpreters' start), and a one-rank process group's numbers are `ddp`'s at one. Burn's `learner.strategy` spellings resolve to these same Lightning strategies
  (tests/app/test_run.py pins that: single, multi and multi_sharded at one device are `trainer=cpu`;
  ddp at one device is `trainer=ddp trainer.devices=1`; multi and ddp at two are `trainer=ddp`;
  multi_sharded at two is `trainer=fsdp`), so these journeys run each of them. `gpu` and the CUDA-graph
  path have their own `cuda` journey.
- Checkpoints move: a 2-process sharded checkpoint resumes on one device (`learner.strategy=
  multi_sharded`, as Burn spells it, and the default strategy) and under `trainer=ddp`, gathered on
  load with its optimizer state, each as `burnlike consolidate --checkpoint` then a resume does it by
  hand; a one-device checkpoint resumes under `trainer=fsdp` (sharded on load).
- A run dir has one owner: a second job on it stops at once, naming the first; after a SIGKILL of
  the first, a third takes the lock over and resumes.
- A rank killed mid-fit: the other stops within seconds (gloo), with one line naming the dead rank,
  the newest checkpoint and the resume command.

Runs of one family train the same numbers: one device (Lightning's single-device loop), one rank of
a process group (DDP, ddp_spawn and FSDP at one process: the distributed sampler orders the epoch),
two ranks (DDP, ddp_spawn and FSDP at two processes: on the CPU FSDP's two-rank gradient average is
DDP's, bit for bit). Each family's uninterrupted run is made once, and each stopped run once, for
every test that needs it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.helpers.fit import cuda
from tests.helpers.idx import write_mnist_idx
from tests.helpers.paths import REPO
from tests.journeys.helpers import app_env, param_bytes, run_app, start_app

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

EPOCHS = 2
# 2048 digits at batch 16: 128 steps an epoch on one device, 64 on each of two ranks
ARGS = ["model=mlp", "model.hidden_sizes=[16]", "data.batch_size=16", "learner.recorder=default",
        f"learner.num_epochs={EPOCHS}", "learner.summary=false", "logger.kinds=[]", "trainer.accelerator=cpu"]
EPOCH_TWO_UNDER_WAY = 0.15  # CPU seconds the job spends after its first epoch's checkpoint: well into epoch 2


@dataclass(frozen=True)
class Placement:
    name: str
    args: tuple[str, ...]
    family: str
    sharded: bool = False

    def __str__(self) -> str:
        return self.name

    def first_checkpoint(self, run: Path) -> Path:
        """What appears once the first epoch's checkpoint is complete (a sharded one: its training state, last)."""
        trainer = run / "checkpoint" / "trainer-1.mpk"
        return trainer / "state.mpk" if self.sharded else trainer


PLACEMENTS = [
    Placement("cpu", ("trainer=cpu",), "one device"),
    Placement("ddp-1", ("trainer=ddp", "trainer.devices=1"), "one rank"),
    Placement("fsdp-1", ("trainer=fsdp", "trainer.devices=1"), "one rank", sharded=True),
    Placement("ddp-2", ("trainer=ddp",), "two ranks"),
    Placement("ddp_spawn-2", ("trainer=ddp_spawn",), "two ranks"),
    Placement("fsdp-2", ("trainer=fsdp",), "two ranks", sharded=True),
]
BY_NAME = {p.name: p for p in PLACEMENTS}
REFERENCE = {"one device": BY_NAME["cpu"], "one rank": BY_NAME["ddp-1"], "two ranks": BY_NAME["ddp-2"]}


@dataclass
class Run:
    """A finished app run: its run dir, exit status and output."""

    dir: Path
    code: int
    output: str

    def ok(self) -> Run:
        assert self.code == 0, self.output[-3000:]
        return self


def app(args: list[str] | tuple[str, ...], out: Path, data: Path) -> Run:
    proc = run_app([*ARGS, *args], out, data, timeout=600)
    return Run(out / "run", proc.returncode, proc.stdout + proc.stderr)


def tree_cpu(proc: subprocess.Popen) -> float:
    """CPU seconds of the process and every process under it (the ranks it started)."""
    total = 0.0
    try:
        root = psutil.Process(proc.pid)
        for p in [root, *root.children(recursive=True)]:
            times = p.cpu_times()
            total += times.user + times.system
    except psutil.Error:  # one ended between the questions
        pass
    return total


def stop_in_epoch_two(args: list[str], placement: Placement, out: Path, data: Path,
                      signum: int = signal.SIGTERM) -> Run:
    """Start the run, and once it is well into epoch 2 (its first epoch's checkpoint complete, then
    some CPU time spent: training is under way) send `signum` to the process the user started."""
    proc = start_app([*ARGS, *args], out, data)
    try:
        trigger = placement.first_checkpoint(out / "run")
        while not trigger.exists() and proc.poll() is None:  # bounded by the test's timeout
            time.sleep(0.002)
        assert trigger.exists(), proc.communicate()[1][-3000:]
        start = tree_cpu(proc)
        while tree_cpu(proc) - start < EPOCH_TWO_UNDER_WAY and proc.poll() is None:
            time.sleep(0.002)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    return Run(out / "run", proc.returncode, stdout + stderr)


def copy_run(run: Path, to: Path, drop: str | None = None) -> Path:
    """A copy of a run's dir at `to/run` (what `app(..., to, ...)` runs in), without `checkpoint/<drop>`."""
    shutil.copytree(run, to / "run")
    for path in (to / "run" / "checkpoint").glob(drop or "-"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return to / "run"


def outcome(run: Path) -> tuple[dict[str, bytes], dict, dict[str, str]]:
    """What a run ended with: the model's parameter bytes, result.json, and every epoch log."""
    logs = {str(p.relative_to(run)): p.read_text() for split in ("train", "valid") for p in (run / split).rglob("*.log")}
    return param_bytes(run / "model.mpk"), json.loads((run / "result.json").read_text()), logs


# --- the world of the runs ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=2048, n_test=64)


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    """`reference(family)`: the family's uninterrupted run (made once)."""
    made: dict[str, Run] = {}

    def get(family: str) -> Run:
        if family not in made:
            made[family] = app(REFERENCE[family].args, tmp_path_factory.mktemp(f"reference-{family}"), data).ok()
        return made[family]

    return get


@pytest.fixture(scope="module")
def stopped(data, tmp_path_factory):
    """`stopped(placement)`: the run stopped by SIGTERM in epoch 2 (made once; copy it to change it)."""
    made: dict[str, Run] = {}

    def get(placement: Placement) -> Run:
        if placement.name not in made:
            made[placement.name] = stop_in_epoch_two(list(placement.args), placement,
                                                     tmp_path_factory.mktemp(f"stopped-{placement}"), data)
        return made[placement.name]

    return get


# --- every trainer group, at one and two processes ----------------------------------------------------
@pytest.mark.parametrize("placement", PLACEMENTS, ids=str)
def test_a_run_stopped_mid_epoch_resumes_with_last_to_the_uninterrupted_run(placement, data, reference, stopped,
                                                                            tmp_path):
    cut = stopped(placement)
    assert cut.code == 128 + signal.SIGTERM, cut.output[-3000:]
    [line] = [line for line in cut.output.splitlines() if "preempted by SIGTERM" in line]
    [saved] = list((cut.dir / "checkpoint").glob("preempted-*.mpk"))  # mid-epoch: the steps so far are saved
    assert line.startswith("burnlike: preempted by SIGTERM at epoch 2, step ") and f"saved to {saved}" in line
    assert saved.is_dir() is placement.sharded
    step = int(saved.name.removeprefix("preempted-").removesuffix(".mpk"))
    assert line.startswith(f"burnlike: preempted by SIGTERM at epoch 2, step {step};")
    assert not (cut.dir / "model.mpk").exists() and not (cut.dir / "checkpoint" / f"trainer-{EPOCHS}.mpk").exists()

    run = copy_run(cut.dir, tmp_path)
    resumed = app([*placement.args, "learner.checkpoint=last"], tmp_path, data).ok()
    assert f"resuming from {run / 'checkpoint' / saved.name}" in (run / "experiment.log").read_text()
    assert outcome(resumed.dir) == outcome(reference(placement.family).dir)
    assert not list((run / "checkpoint").glob("preempted-*"))  # superseded by the resumed run's epoch


@cuda
@pytest.mark.parametrize("args", [("trainer=gpu",), ("trainer=gpu", "learner.cuda_graph=true")],
                         ids=["gpu", "gpu-cuda-graph"])
def test_on_a_gpu_a_run_stopped_mid_epoch_resumes_with_last_to_the_uninterrupted_run(args, data, tmp_path):
    """One GPU, eager and with the step in a CUDA graph: the same stop and resume, the same result."""
    gpu = [a for a in ARGS if a != "trainer.accelerator=cpu"]
    env = {**app_env(data), "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0") or "0"}

    def start(out: Path, *extra: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(REPO / "train.py"), *gpu, *args, *extra,
                                 "learner.progress_bar=false", f"hydra.run.dir={out}"], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    straight = start(tmp_path / "straight")
    assert straight.wait(timeout=600) == 0, straight.communicate()[1][-3000:]
    run = tmp_path / "cut"
    proc = start(run)
    placement = Placement("gpu", args, "gpu")
    while not placement.first_checkpoint(run).exists() and proc.poll() is None:  # bounded by the test's timeout
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=300) == 128 + signal.SIGTERM, proc.communicate()[1][-3000:]
    resumed = start(run, "learner.checkpoint=last")
    assert resumed.wait(timeout=600) == 0, resumed.communicate()[1][-3000:]
    assert outcome(run) == outcome(tmp_path / "straight")


# --- checkpoints that move between strategies and process counts --------------------------------------
def consolidate(checkpoint: Path) -> None:
    """`burnlike consolidate <trainer-N> --checkpoint`, as a user runs it (the model from the run's config)."""
    proc = subprocess.run([sys.executable, "-m", "burnlike.cli", "consolidate", str(checkpoint), "--checkpoint"],
                          cwd=REPO, env=app_env(Path(".")), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_a_two_process_sharded_checkpoint_resumes_on_one_device_and_under_ddp_as_gathered_by_hand(
        data, stopped, tmp_path):
    """The first epoch's checkpoint of a 2-process `multi_sharded` run (`trainer=fsdp`: the same
    strategy) is a folder of shards. Resumed as it is, it is gathered on load (weights and
    optimizer state); by hand, `burnlike consolidate --checkpoint` gathers it into one file first.
    Either way the run ends the same, at one device (Burn's `multi_sharded` spelling there, the
    default strategy by hand) and under `trainer=ddp`."""
    sharded = stopped(BY_NAME["fsdp-2"]).dir
    assert (sharded / "checkpoint" / "trainer-1.mpk" / "shard-1.mpk").exists()
    auto_one = app(["trainer=cpu", "learner.strategy=multi_sharded", "learner.checkpoint=last"],
                   copy_run(sharded, tmp_path / "auto-one", drop="preempted-*").parent, data).ok()
    auto_ddp = app(["trainer=ddp", "learner.checkpoint=last"],
                   copy_run(sharded, tmp_path / "auto-ddp", drop="preempted-*").parent, data).ok()
    by_hand = copy_run(sharded, tmp_path / "by-hand", drop="preempted-*")
    consolidate(by_hand / "checkpoint" / "trainer-1.mpk")
    assert (by_hand / "checkpoint" / "trainer-1.mpk").is_file()
    for name in ("hand-one", "hand-ddp"):
        shutil.copytree(by_hand, tmp_path / name / "run")
    hand_one = app(["trainer=cpu", "learner.checkpoint=last"], tmp_path / "hand-one", data).ok()
    hand_ddp = app(["trainer=ddp", "learner.checkpoint=last"], tmp_path / "hand-ddp", data).ok()
    for run in (auto_one, auto_ddp, hand_one, hand_ddp):
        assert f"resuming from {run.dir / 'checkpoint' / 'trainer-1.mpk'}" in (run.dir / "experiment.log").read_text()
    assert outcome(auto_one.dir) == outcome(hand_one.dir)
    assert outcome(auto_ddp.dir) == outcome(hand_ddp.dir)
    assert outcome(auto_one.dir)[0] != outcome(auto_ddp.dir)[0]  # two different moves, not one run twice


def test_a_one_device_checkpoint_resumes_under_fsdp_on_two_processes_sharded_on_load(data, stopped, tmp_path):
    """Its weights (`model-1`, a Burn module record) and Burn's optimizer record (`optim-1`) are
    sharded over the two ranks: the run ends as the same checkpoint resumed under DDP does (FSDP's
    two-rank update is DDP's on the CPU, bit for bit)."""
    one = stopped(BY_NAME["cpu"]).dir
    fsdp = app(["trainer=fsdp", "learner.checkpoint=last"], copy_run(one, tmp_path / "fsdp", "preempted-*").parent,
               data).ok()
    ddp = app(["trainer=ddp", "learner.checkpoint=last"], copy_run(one, tmp_path / "ddp", "preempted-*").parent,
              data).ok()
    assert (fsdp.dir / "checkpoint" / f"trainer-{EPOCHS}.mpk" / "shard-1.mpk").exists()  # it went on sharded
    assert outcome(fsdp.dir) == outcome(ddp.dir)


# --- one job per run dir ---------------------------------------------------------------------------------
def test_a_second_job_on_a_run_dir_stops_naming_the_first_and_a_third_takes_over_after_a_kill(data, reference,
                                                                                            tmp_path):
    first = start_app([*ARGS, "trainer=cpu"], tmp_path, data)
    run = tmp_path / "run"
    try:
        while not (run / "checkpoint" / "trainer-1.mpk").exists() and first.poll() is None:  # bounded: test timeout
            time.sleep(0.002)
        os.kill(first.pid, signal.SIGSTOP)  # the first job holds the dir (paused: it leaves the CPU to the second)
        before = (run / "config.json").read_bytes()
        began = time.monotonic()
        second = app(["trainer=cpu"], tmp_path, data)
        took = time.monotonic() - began
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        first.kill()
    assert second.code != 0 and took < 10, (second.code, took, second.output[-3000:])
    [line] = [line for line in second.output.splitlines() if line.startswith("error:")]
    assert f"{run} is in use by another job: pid {first.pid} on " in line
    assert (run / "config.json").read_bytes() == before  # the second wrote nothing of its own
    third = app(["trainer=cpu", "learner.checkpoint=last"], tmp_path, data).ok()
    assert f"taking over the lock of pid {first.pid} " in third.output and "its process has ended" in third.output
    assert f"resuming from {run / 'checkpoint' / 'trainer-1.mpk'}" in (run / "experiment.log").read_text()
    assert outcome(run) == outcome(reference("one device").dir)
    assert not (run / ".lock").exists()


# --- a rank that dies ---------------------------------------------------------------------------------------
def test_a_killed_rank_stops_the_other_with_one_line_naming_it_and_the_resume(data, tmp_path):
    """SIGKILL to rank 1 (the process Lightning started beside the one the user started): rank 0's
    next collective fails at once (gloo), and it exits non-zero with one line, not a traceback.
    `learner.dist_timeout=60` bounds the wait where a transport would hang instead."""
    proc = start_app([*ARGS, "trainer=ddp", "learner.num_epochs=50", "learner.dist_timeout=60"], tmp_path, data)
    run = tmp_path / "run"
    try:
        while not (run / "checkpoint" / "trainer-1.mpk").exists() and proc.poll() is None:  # bounded: test timeout
            time.sleep(0.002)
        [rank1] = [p for p in psutil.Process(proc.pid).children(recursive=True) if "train.py" in " ".join(p.cmdline())]
        rank1.send_signal(signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("burnlike: rank 1 ")]
    assert len(lines) == 1, stderr[-3000:]
    assert lines[0].startswith(f"burnlike: rank 1 (pid {rank1.pid} on ")
    assert "stopped, so rank 0 stops too; the newest complete checkpoint is " in lines[0]
    assert f"{run / 'checkpoint'}/trainer-" in lines[0] and "resume with learner.checkpoint=last" in lines[0]
    assert "Traceback" not in stderr
