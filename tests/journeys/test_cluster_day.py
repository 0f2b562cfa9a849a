"""A cluster day as users live it: the training app in one process or as a 2-process DDP job (gloo,
CPU), stopped in every way a scheduler stops it, resumed with the same command
(`learner.checkpoint=last`, what a requeue runs), under each logger, with its artifacts on a local
disk, on S3 (a moto server on loopback) or on `memory://`. Every run ends exactly as the
uninterrupted run of the same seed: the same weights (full precision), the same epoch values and
`value,count` log lines, one logger run continued, one line per event in experiment.log.

Not the full product of the axes: a covering set in which every value of every axis meets every
value of every other axis at least once (pairwise), under the one constraint that a `memory://`
filesystem lives in one process (so one-process runs, in this test's process).

The moments of the signals come from the run itself: the first epoch's checkpoint appearing (the
signal lands in epoch 2's training), epoch 2's or the last epoch's train log appearing (the train
epoch is stored as its closing validation starts: the signal lands in that validation). Wherever
it lands, the resumed run must end as the uninterrupted one.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from burnlike.record.format.location import AnyPath, as_path
from tests.helpers.idx import write_mnist_idx
from tests.helpers.paths import REPO
from tests.helpers.s3 import moto_s3
from tests.journeys.helpers import param_bytes

PROCS = (1, 2)
EVENTS = ("clean", "sigterm_launcher", "sigterm_every_rank", "sigusr1", "in_validation", "in_last_validation")
LOGGERS = ("csv", "tensorboard", "mlflow", "wandb")
STORES = ("local", "s3", "memory")
EPOCHS = 3
ARGS = ["model=mlp", "model.hidden_sizes=[16]", "data.batch_size=16", "learner.recorder=default",
        f"learner.num_epochs={EPOCHS}", "learner.summary=false", "learner.checkpoint=last", "logger.every_n_steps=0"]


@dataclass(frozen=True)
class Case:
    procs: int
    event: str
    logger: str
    store: str

    def __str__(self) -> str:
        return f"{self.procs}proc-{self.event}-{self.logger}-{self.store}"


def allowed(case: Case) -> bool:
    return not (case.store == "memory" and case.procs != 1)  # one process's filesystem


def pairwise(axes: dict[str, tuple[object, ...]], ok: Callable[[Case], bool]) -> list[Case]:
    """A covering set: each pair of values of two axes in some case (greedy, deterministic)."""
    names = list(axes)
    candidates = [Case(**dict(zip(names, values))) for values in itertools.product(*axes.values())]
    candidates = [c for c in candidates if ok(c)]

    def pairs(case: Case) -> set[tuple[tuple[str, object], tuple[str, object]]]:
        items = [(n, getattr(case, n)) for n in names]
        return set(itertools.combinations(items, 2))

    needed = set().union(*(pairs(c) for c in candidates))
    chosen: list[Case] = []
    while needed:
        best = max(candidates, key=lambda c: len(pairs(c) & needed))
        chosen.append(best)
        needed -= pairs(best)
    return chosen


CASES = pairwise({"procs": PROCS, "event": EVENTS, "logger": LOGGERS, "store": STORES}, allowed)


def test_the_cases_cover_every_pair_of_values():
    """The covering set's own property (the journeys below are only as good as it)."""
    seen = {(a, b) for c in CASES for a, b in itertools.combinations(
        [("procs", c.procs), ("event", c.event), ("logger", c.logger), ("store", c.store)], 2)}
    for (na, va), (nb, vb) in itertools.combinations(
            [(n, v) for n, vs in (("procs", PROCS), ("event", EVENTS), ("logger", LOGGERS), ("store", STORES))
             for v in vs], 2):
        if na != nb and allowed_pair(na, va, nb, vb):
            assert ((na, va), (nb, vb)) in seen, (na, va, nb, vb)
    assert len(CASES) < len(list(itertools.product(PROCS, EVENTS, LOGGERS, STORES))) / 4


def allowed_pair(na: str, va: object, nb: str, vb: object) -> bool:
    values = {na: va, nb: vb}
    return not (values.get("store") == "memory" and values.get("procs") == 2)


# --- the world around the runs -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    """MNIST files of 768 train and 96 test digits: 48 steps an epoch at batch 16."""
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=768, n_test=96)


@pytest.fixture(scope="module")
def s3():
    """An S3 server (moto) on loopback and the environment that points fsspec and boto at it."""
    with moto_s3() as env:
        yield env


def job_args(case: Case) -> list[str]:
    args = [*ARGS, f"logger={case.logger}"]
    if case.procs == 2:
        args += ["trainer=ddp", "trainer.devices=2", "trainer.accelerator=cpu"]
    return args


def env_of(data: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "BURNLIKE_DATA": str(data), "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": "",
            "WANDB_SILENT": "true", "WANDB_MODE": "offline", **(extra or {})}


def command(args: list[str], out: Path, artifacts: str | None) -> list[str]:
    where = [f"artifacts={artifacts}"] if artifacts else []
    return [sys.executable, str(REPO / "train.py"), *args, *where, "learner.progress_bar=false",
            f"hydra.run.dir={out}"]


def wait_for(path: AnyPath, proc: subprocess.Popen | threading.Thread, limit: float = 240.0) -> bool:
    """Poll until `path` exists or the run has ended; whether it exists."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists():
            return True
        if (proc.poll() is not None) if isinstance(proc, subprocess.Popen) else not proc.is_alive():
            return path.exists()
        time.sleep(0.005)
    return False


def trigger(artifacts: AnyPath, event: str) -> AnyPath | None:
    """The file whose appearance is the event's moment."""
    return {
        "sigterm_launcher": artifacts / "checkpoint" / "trainer-1.mpk",
        "sigterm_every_rank": artifacts / "checkpoint" / "trainer-1.mpk",
        "sigusr1": artifacts / "checkpoint" / "trainer-1.mpk",
        "in_validation": artifacts / "train" / "epoch-2" / "Loss.log",
        "in_last_validation": artifacts / "train" / f"epoch-{EPOCHS}" / "Loss.log",
    }.get(event)


SIGNAL = {"sigusr1": signal.SIGUSR1}


def send(proc: subprocess.Popen, event: str) -> None:
    signum = SIGNAL.get(event, signal.SIGTERM)
    if event == "sigterm_every_rank":
        import psutil

        for child in psutil.Process(proc.pid).children(recursive=True):
            child.send_signal(signum)
    proc.send_signal(signum)


@dataclass
class Outcome:
    """What a job left: its artifacts, the exit statuses of its runs, its output, its local run dir."""

    artifacts: AnyPath
    local: Path
    codes: list[int]
    output: str


def run_job(case: Case, out: Path, data: Path, s3_env: dict[str, str] | None) -> Outcome:
    """The case's job as a user runs it: the first start (stopped by the event), then the same command."""
    artifacts_url = {"local": None, "s3": f"s3://runs/{case}"}.get(case.store)
    artifacts = as_path(artifacts_url) if artifacts_url else out / "run"
    env = env_of(data, s3_env)
    codes, output = [], ""
    first_args = job_args(case)
    if case.event == "clean":  # a run that stopped after 2 epochs, then the same job asked for 3
        first_args = [*first_args, "learner.num_epochs=2"]
    for args in (first_args, job_args(case)):
        proc = subprocess.Popen(command(args, out / "run", artifacts_url), cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            moment = trigger(artifacts, case.event) if not codes else None
            if moment is not None and wait_for(moment, proc):
                signalled = time.monotonic()
                send(proc, case.event)
                stdout, stderr = proc.communicate(timeout=60)
                assert time.monotonic() - signalled < 30, "the run took longer than 30 s to stop"
            else:
                stdout, stderr = proc.communicate(timeout=600)
        finally:
            proc.kill()
        codes.append(proc.returncode)
        output += stdout + stderr
    return Outcome(artifacts, out / "run", codes, output)


def run_in_process(case: Case, out: Path, data: Path, conf) -> Outcome:
    """The case's job in this process (a `memory://` store lives here): a watcher thread signals it."""
    from burnlike.app.run import run
    from burnlike.train.preemption import Preempted

    artifacts_url = f"memory://runs/{case}"
    artifacts = as_path(artifacts_url)
    codes = []
    first = [*job_args(case), f"data.root={data}", f"artifacts={artifacts_url}", "learner.progress_bar=false"]
    if case.event == "clean":
        first = [*first, "learner.num_epochs=2"]
    for args in (first, [*job_args(case), f"data.root={data}", f"artifacts={artifacts_url}",
                         "learner.progress_bar=false"]):
        moment = trigger(artifacts, case.event) if not codes else None
        done = threading.Event()
        watcher = None
        if moment is not None:
            def watch(path=moment, event=case.event, done=done) -> None:
                while not done.is_set():
                    if path.exists():
                        os.kill(os.getpid(), SIGNAL.get(event, signal.SIGTERM))
                        return
                    time.sleep(0.005)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
        try:
            run(conf(*args), out / "run")
            codes.append(0)
        except Preempted as stopped:
            codes.append(int(stopped.code))
        finally:
            done.set()
            if watcher is not None:
                watcher.join()
    return Outcome(artifacts, out / "run", codes, "")


@pytest.fixture(scope="module")
def references(mnist, tmp_path_factory):
    """The uninterrupted job, one process and two, on a local disk: `procs -> Outcome`."""
    done = {}
    for procs in PROCS:
        out = tmp_path_factory.mktemp(f"reference-{procs}")
        case = Case(procs, "none", "csv", "local")
        proc = subprocess.run(command(job_args(case), out / "run", None), cwd=REPO, env=env_of(mnist),
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        done[procs] = Outcome(out / "run", out / "run", [0], proc.stdout + proc.stderr)
    return done


# --- what must hold after a job -------------------------------------------------------------------------
def epoch_logs(artifacts: AnyPath) -> dict[str, str]:
    return {f"{split}/epoch-{e}/{name}": (artifacts / split / f"epoch-{e}" / name).read_text()
            for split in ("train", "valid") for e in range(1, EPOCHS + 1) for name in ("Accuracy.log", "Loss.log")}


def mlflow_client(outcome: Outcome):
    """A client on the run dir's file store (which the app opts into, as this reader must)."""
    from mlflow.tracking import MlflowClient

    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    return MlflowClient(tracking_uri=(outcome.local / "mlruns").resolve().as_uri())


def logger_runs(case: Case, outcome: Outcome) -> int:
    """How many runs the job's logger holds (a continued run is one)."""
    if case.logger == "csv":
        return len([p for p in (outcome.artifacts / "csv").iterdir() if p.name.startswith("version_")])
    if case.logger == "tensorboard":
        return len([p for p in (outcome.artifacts / "tensorboard").iterdir() if p.name.startswith("version_")])
    if case.logger == "mlflow":
        client = mlflow_client(outcome)
        return sum(len(client.search_runs([e.experiment_id])) for e in client.search_experiments())
    # offline-run-<date>_<time>-<run id>, with "-1" when both runs started in the same second
    runs = [re.fullmatch(r"offline-run-\d{8}_\d{6}-([a-z0-9]+)(-\d+)?", p.name)
            for p in (outcome.local / "wandb").glob("offline-run-*")]
    return len({m[1] for m in runs if m})


def logged_epochs(case: Case, outcome: Outcome) -> list[int]:
    """The epochs of valid/Loss the logger holds."""
    if case.logger == "csv":
        import csv
        import io

        [version] = [p for p in (outcome.artifacts / "csv").iterdir() if p.name.startswith("version_")]
        rows = csv.DictReader(io.StringIO((version / "metrics.csv").read_text()))
        return sorted(int(r["step"]) for r in rows if r.get("valid/Loss"))
    if case.logger == "mlflow":
        client = mlflow_client(outcome)
        [run] = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
        return sorted(m.step for m in client.get_metric_history(run.info.run_id, "valid/Loss"))
    return list(range(1, EPOCHS + 1))  # TensorBoard's and W&B's files: their run count is checked above


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_stopped_job_resumed_with_the_same_command_ends_as_the_uninterrupted_one(
        case, mnist, references, tmp_path, request, conf):
    if case.logger in ("mlflow", "wandb"):
        pytest.importorskip(case.logger)
    s3_env = request.getfixturevalue("s3") if case.store == "s3" else None
    if case.store == "memory":
        outcome = run_in_process(case, tmp_path, mnist, conf)
    else:
        outcome = run_job(case, tmp_path, mnist, s3_env)
    stopped, resumed = outcome.codes
    expected_stop = {0} if case.event == "clean" else {128 + SIGNAL.get(case.event, signal.SIGTERM)}
    if case.event == "in_last_validation":
        expected_stop.add(0)  # the signal may come as the run ends: it finished
    assert stopped in expected_stop and resumed == 0, (outcome.codes, outcome.output[-3000:])
    reference = references[case.procs]
    assert param_bytes(outcome.artifacts / "model.mpk") == param_bytes(reference.artifacts / "model.mpk")
    result = json.loads((outcome.artifacts / "result.json").read_text())
    assert result == json.loads((reference.artifacts / "result.json").read_text())
    assert epoch_logs(outcome.artifacts) == epoch_logs(reference.artifacts)
    assert logger_runs(case, outcome) == 1  # the resumed run continued the logger's run
    assert logged_epochs(case, outcome) == list(range(1, EPOCHS + 1))
    assert "sync_dist=True" not in outcome.output
    if case.store == "local":
        log = (outcome.artifacts / "experiment.log").read_text()
        assert log.count("fitting Mlp for") == 2  # one line per run, not one per rank
