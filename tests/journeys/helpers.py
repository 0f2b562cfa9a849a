"""TODO: docstring."""

import os
import subprocess
import sys

from tests.helpers.paths import REPO


def app_cmd(args, out, script=REPO / "train.py"):
    return [sys.executable, str(script), *args, "learner.progress_bar=false", f"hydra.run.dir={out}/run",
            f"hydra.sweep.dir={out}/sweep"]


def app_env(tiny_app, extra=None):
    """The app's runs here test its CPU path on any machine (`trainer=ddp` means two CPU processes,
    not two GPUs a one-GPU machine lacks); the GPU path has its own `cuda` tests."""
    return {**os.environ, "BURNLIKE_DATA": str(tiny_app), "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": "",
            **(extra or {})}


def run_app(args, tmp_path, tiny_app, script=REPO / "train.py", cwd=REPO, timeout=300, env_extra=None):
    return subprocess.run(app_cmd(args, tmp_path, script), cwd=cwd, env=app_env(tiny_app, env_extra),
                          capture_output=True, text=True, timeout=timeout)


def start_app(args, out, tiny_app, script=REPO / "train.py", cwd=REPO, env_extra=None):
    return subprocess.Popen(app_cmd(args, out, script), cwd=cwd, env=app_env(tiny_app, env_extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=300):
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
