"""The training app from the command line (`train.py` in a child process, as a user runs it): what it
prints for bad overrides, missing or corrupt data, `--help` and `--cfg job`; the artifacts of a run and
a resume from the CLI; the plain output to a file and the live view in a terminal."""

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from burnlike.record import load_checkpoint
from burnlike.train.logger import read_metric_log
from tests.helpers.app import IMAGE
from tests.helpers.idx import write_mnist_idx
from tests.helpers.images import write_corrupt, write_splits
from tests.helpers.paths import REPO
from tests.journeys.helpers import finish, run_app, start_app

BAD = {  # override -> what the message must name
    "learner.num_epocs=3": "num_epocs",
    "learner.num_epochs=many": "learner.num_epochs",
    "model=resnet9000": "model/resnet9000",
    "learner.num_epochs=-1": "learner.num_epochs",
    "learner.recorder=pickle": "learner.recorder",
    "trainer.precision=banana": "trainer.precision",
    "learner.checkpoint=7": "learner.checkpoint",
    "optimized_metric=valid/Speed": "optimized_metric",
    "trainer.max_epochs=3": "learner.num_epochs",  # Lightning's name: the app's key is named
}

# Runs that end before training: started together, one process each, by the `quick_runs` fixture.
QUICK = {**{k: [k] for k in BAD}, "help": ["--help"], "cfg": ["--cfg", "job", "optimizer=sgd"],
         "no_data": ["data.root=/nonexistent/mnist"],
         "no_text": ["experiment=shakespeare_char", "data.root=/nonexistent/text"]}


@pytest.fixture(scope="module")
def quick_runs(tiny_app, tmp_path_factory):
    """Each QUICK run's finished process, by its QUICK name."""
    base = tmp_path_factory.mktemp("quick")
    procs = {name: start_app(args, base / str(i), tiny_app) for i, (name, args) in enumerate(QUICK.items())}
    return {name: finish(p, timeout=240) for name, p in procs.items()}


@pytest.fixture(scope="module")
def mnist_64(tmp_path_factory):
    """An MNIST root of 64 training and 32 test digits."""
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=64, n_test=32)


def env_showing_every_warning(data_root):
    """The caller's environment with every warning shown (no PYTHONWARNINGS) and the data at `data_root`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return {**env, "BURNLIKE_DATA": str(data_root)}


# --- runs that stop before training ---------------------------------------------------------------------
def test_help_lists_the_options_and_cfg_job_prints_the_composed_config(quick_runs):
    proc = quick_runs["help"]
    assert proc.returncode == 0 and "model: mnist, mlp" in proc.stdout and "trainer=ddp" in proc.stdout
    assert "num_epochs: 10" in proc.stdout
    assert "experiment: shakespeare_char, shakespeare_char_gpu" in proc.stdout
    assert "scheduler: cosine, warmup_cosine" in proc.stdout
    proc = quick_runs["cfg"]
    assert proc.returncode == 0 and "lr: 0.01" in proc.stdout
    assert OmegaConf.create(proc.stdout).optimizer.lr == 0.01


@pytest.mark.parametrize("override", list(BAD))
def test_bad_overrides_exit_nonzero_naming_the_key(quick_runs, override):
    proc = quick_runs[override]
    assert proc.returncode != 0
    assert BAD[override] in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "File \"" not in proc.stderr
    message = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert message or "Set the environment variable HYDRA_FULL_ERROR" in proc.stderr
    assert len(message) <= 1  # one paragraph: the app's own errors are a single `error:` line


@pytest.mark.parametrize(("override", "expected"), [
    ("learner.num_epochs=many", "an integer"),  # a type the schema refuses: named before Hydra composes
    ("learner.num_epochs=-1", "an integer >= 1"),  # a value training can't use: before the config is printed
])
def test_a_wrong_value_is_one_line_and_exit_2_before_any_config_line(quick_runs, override, expected):
    proc = quick_runs[override]
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[-1] == f"error: {override} is invalid: expected {expected}"
    assert "config " not in proc.stdout, proc.stdout


def test_a_run_that_fails_its_checks_leaves_no_run_dir(quick_runs):
    """Hydra makes the run dir before the job starts; a run that never trained removes it again."""
    for name, proc in quick_runs.items():
        if name in ("help", "cfg"):
            continue
        run_dir = Path(next(a for a in proc.args if a.startswith("hydra.run.dir=")).split("=", 1)[1])
        assert proc.returncode != 0 and not run_dir.exists(), (name, sorted(run_dir.rglob("*")))


def test_missing_data_names_the_key_and_the_files(quick_runs):
    proc = quick_runs["no_data"]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "/nonexistent/mnist" in proc.stderr and "train-images-idx3-ubyte" in proc.stderr


def test_a_missing_text_is_one_line_naming_the_file(quick_runs):
    proc = quick_runs["no_text"]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "/nonexistent/text/shakespeare_char/input.txt not found" in errors[0]


@pytest.mark.slow
def test_train_py_names_a_corrupt_image_in_one_line_and_exits_2(tmp_path):
    """A corrupt image in an image-folder dataset is one line naming the file, exit code 2, no traceback."""
    broken = write_splits(tmp_path / "broken", classes=3, train=2, valid=1)
    bad = write_corrupt(broken / "train" / "class1" / "0000.png", "truncated")
    args = [*IMAGE, "learner.num_epochs=1", "learner.summary=false", f"hydra.run.dir={tmp_path}/run",
            f"data.root={broken}"]
    proc = subprocess.run([sys.executable, "train.py", *args], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"error: {bad}: cannot decode as an image" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture
def checkpoint_mount(tmp_path):
    """`tmp_path/run/checkpoint` on a filesystem of its own (a tmpfs), so a test can make it read-only
    as a cluster's quota or a remounted share does (root ignores a directory's mode bits)."""
    folder = tmp_path / "run" / "checkpoint"
    folder.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root on Linux")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.slow
def test_a_read_only_checkpoint_folder_ends_the_run_with_one_line_naming_the_file(tmp_path, tiny_app,
                                                                                  checkpoint_mount):
    args = ["model=mlp", "learner.summary=false"]
    proc = run_app([*args, "learner.num_epochs=1"], tmp_path, tiny_app)
    assert proc.returncode == 0, proc.stderr[-3000:]
    subprocess.run(["mount", "-o", "remount,ro", str(checkpoint_mount)], check=True)
    proc = run_app([*args, "learner.num_epochs=2", "learner.checkpoint=last"], tmp_path, tiny_app)
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "Read-only file system" in errors[0] and f"'{checkpoint_mount}/" in errors[0] and "-2.mpk'" in errors[0]
    run = tmp_path / "run"
    assert list(json.loads((run / "result.json").read_text())["epochs"]) == ["1"]  # epoch 2 was never saved
    assert load_checkpoint(checkpoint_mount / "trainer-1.mpk")["epoch"] == 0


# --- a run, its artifacts and a resume ------------------------------------------------------------------
@pytest.mark.slow
def test_single_run_leaves_burn_artifacts_and_resumes_from_the_cli(tmp_path, tiny_app):
    proc = run_app(["learner.num_epochs=1", "model=mnist", "trainer.devices=1"], tmp_path, tiny_app)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    for name in (".hydra/config.yaml", ".hydra/overrides.yaml", "config.json", "experiment.log",
                 "train/epoch-1/Accuracy.log", "valid/epoch-1/Loss.log", "checkpoint/model-1.mpk", "model.mpk",
                 "result.json"):
        assert (run / name).exists(), name
    assert "Learner Summary" in proc.stdout and "optimizer" in proc.stdout  # summary and the config tree
    result = json.loads((run / "result.json").read_text())
    assert result["optimized_metric"] == "valid/Accuracy" and result["mode"] == "max"
    assert result["value"] == max(result["epochs"].values()) == result["epochs"][str(result["best_epoch"])]
    # one process: rank 0's Burn-layout logs hold every validation step, so they agree exactly
    assert result["epochs"]["1"] == pytest.approx(read_metric_log(run / "valid" / "epoch-1" / "Accuracy.log"), rel=1e-6)
    assert json.loads((run / "config.json").read_text())["learner"]["num_epochs"] == 1

    # resume from the CLI: same run dir, checkpoint 1, one more epoch
    proc = run_app(["learner.num_epochs=2", "learner.checkpoint=1"], tmp_path, tiny_app)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (run / "checkpoint" / "model-2.mpk").exists() and (run / "train" / "epoch-1").is_dir()
    assert not (run / "train" / "epoch-3").exists()
    assert "resuming from" in (run / "experiment.log").read_text()
    resumed = json.loads((run / "result.json").read_text())
    assert set(resumed["epochs"]) == {"1", "2"} and resumed["epochs"]["1"] == result["epochs"]["1"]
    assert resumed["value"] == max(resumed["epochs"].values())


# --- what a run prints ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_guide_to_a_file_is_short_plain_and_counts_epochs_from_1(mnist_64, tmp_path):
    run = tmp_path / "run"
    with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.run([sys.executable, str(REPO / "train.py"), "learner.num_epochs=2",
                               f"hydra.run.dir={run}"], cwd=REPO, env=env_showing_every_warning(mnist_64),
                              stdout=out, stderr=err, timeout=300)
    stdout, stderr = (tmp_path / "stdout.txt").read_text(), (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 0, stderr
    assert "\r" not in stdout and "\x1b[" not in stdout
    assert len(stdout.splitlines()) < 50, stdout
    lines = stdout.splitlines()
    for epoch in (1, 2):
        assert any(line.startswith(f"epoch {epoch}/2 train Accuracy=") and line.endswith("it/s") for line in lines)
        assert any(line.startswith(f"epoch {epoch}/2 valid Accuracy=") for line in lines)
    assert not any(line.startswith("epoch 0") or "Epoch 0" in line for line in lines)
    # no messages from the libraries underneath that don't apply, in stderr or experiment.log
    log = (run / "experiment.log").read_text()
    for text in (stderr, log, stdout):
        for noise in ("weights_only", "litlogger", "litmodels", "LeafSpec", "shuffling enabled", "Warning"):
            assert noise not in text, (noise, text)
    assert stderr.strip() == "", stderr
    assert "epoch 2 valid: Accuracy=" in log  # burnlike's own lines stay


@pytest.mark.slow
def test_live_view_shows_in_a_pseudo_terminal(mnist_64, tmp_path):
    main, child = pty.openpty()
    env = {**env_showing_every_warning(mnist_64), "COLUMNS": "120", "LINES": "40", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, str(REPO / "train.py"), "model=mlp", "learner.num_epochs=2",
                             f"hydra.run.dir={tmp_path / 'run'}"], cwd=REPO, env=env, stdin=child, stdout=child,
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
