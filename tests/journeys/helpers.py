"""Child processes for the journeys: `train.py` (or another app script) run as a user runs it, and the
scripts of tests/helpers/ that a test runs in a process of its own."""

import os
import subprocess
import sys

from tests.helpers.paths import HELPERS, REPO


def app_cmd(args, out, script=REPO / "train.py"):
    """The command line of an app run: no progress bar, Hydra's run dir `out/run`, sweep dir `out/sweep`."""
    return [sys.executable, str(script), *args, "learner.progress_bar=false", f"hydra.run.dir={out}/run",
            f"hydra.sweep.dir={out}/sweep"]


def app_env(data_root, extra=None):
    """The app's runs here test its CPU path on any machine (`trainer=ddp` means two CPU processes,
    not two GPUs a one-GPU machine lacks); the GPU path has its own `cuda` tests."""
    return {**os.environ, "BURNLIKE_DATA": str(data_root), "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": "",
            **(extra or {})}


def run_app(args, out, data_root, script=REPO / "train.py", cwd=REPO, timeout=300, env_extra=None):
    """Run the app to the end on the MNIST files under `data_root`; its artifacts go to `out/run`."""
    return subprocess.run(app_cmd(args, out, script), cwd=cwd, env=app_env(data_root, env_extra),
                          capture_output=True, text=True, timeout=timeout)


def start_app(args, out, data_root, script=REPO / "train.py", cwd=REPO, env_extra=None):
    """`run_app` without waiting: the process, its output piped (read it with `finish`)."""
    return subprocess.Popen(app_cmd(args, out, script), cwd=cwd, env=app_env(data_root, env_extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=300):
    """Wait for a `start_app` process: its exit code and output, as `run_app` returns them."""
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_helper_script(name, *args, timeout=280):
    """Run the script tests/helpers/`name` with `args` to the end, warnings silenced."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, str(HELPERS / name), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def param_bytes(path):
    """Every parameter's bytes in a module record (a local or remote path), by key: ParamIds differ
    between runs, the weights of two equal runs don't."""
    import msgpack

    out: dict[str, bytes] = {}

    def walk(node: object, key: str) -> None:
        if isinstance(node, dict) and set(node) == {"id", "param"}:
            out[key] = node["param"]["bytes"]
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{key}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{key}.{i}")

    walk(msgpack.unpackb(path.read_bytes(), raw=False)["item"], "")
    return out
