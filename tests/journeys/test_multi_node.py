"""Two nodes of two processes each, simulated on one machine as a cluster runs them: one `torchrun`
per node (`--nnodes=2 --node-rank=R`, one master address and port), every rank the app over gloo,
one shared run dir. A DDP and an FSDP job run to the end; the same job, preempted by SIGUSR1 to
every rank and resumed with `learner.checkpoint=last`, ends with the uninterrupted job's weights and
results: exactly under FSDP; under DDP within a few float32 ulps, as gloo's ring all-reduce adds four
ranks' gradients in an order set by DDP's gradient buckets, which DDP lays out anew in a resumed fit
(with two ranks the sum is the same either way, and the 2-process journeys compare bytes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import psutil
import pytest

from tests.helpers.idx import write_mnist_idx
from tests.helpers.net import free_port
from tests.helpers.paths import REPO
from tests.journeys.helpers import app_cmd, app_env, param_bytes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

NODES, PER_NODE = 2, 2
ARGS = ["model=mlp", "model.hidden_sizes=[16]", "data.batch_size=16", "learner.recorder=default",
        "learner.num_epochs=4", "learner.summary=false", "logger.kinds=[]", "trainer.accelerator=cpu",
        f"trainer.devices={PER_NODE}", f"trainer.num_nodes={NODES}"]


def start_nodes(args: list[str], out, data) -> list[subprocess.Popen[str]]:
    """One torchrun per node, as each node of the job runs it (docs/clusters.md)."""
    port = free_port()
    script, *rest = app_cmd(args, out)[1:]
    return [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", f"--nnodes={NODES}",
                              f"--nproc-per-node={PER_NODE}", f"--node-rank={node}", "--master-addr=127.0.0.1",
                              f"--master-port={port}", script, *rest],
                             cwd=REPO, env=app_env(data, {"OMP_NUM_THREADS": "1"}), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
            for node in range(NODES)]


def wait_nodes(nodes: list[subprocess.Popen[str]], timeout: float = 600) -> tuple[list[int], str]:
    """Every node's exit status and output."""
    outputs = []
    for node in nodes:
        try:
            outputs.append(node.communicate(timeout=timeout)[0])
        finally:
            node.kill()
    return [node.returncode for node in nodes], "\n".join(out[-3000:] for out in outputs)


def ranks_of(nodes: list[subprocess.Popen[str]]) -> list[psutil.Process]:
    """The training processes torchrun started (its workers: children running train.py)."""
    return [child for node in nodes for child in psutil.Process(node.pid).children()
            if "train.py" in " ".join(child.cmdline())]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=512, n_test=128)


@pytest.mark.parametrize(("trainer", "first"), [("ddp", "trainer-1.mpk"), ("fsdp", "trainer-1.mpk/state.mpk")])
def test_a_two_node_job_preempted_on_every_rank_resumes_to_the_uninterrupted_result(tmp_path, data, trainer, first):
    args = [*ARGS, f"trainer={trainer}"]
    codes, output = wait_nodes(start_nodes(args, tmp_path / "whole", data))
    assert codes == [0, 0], output
    whole = tmp_path / "whole" / "run"

    out = tmp_path / "stopped"
    nodes = start_nodes(args, out, data)
    trigger = out / "run" / "checkpoint" / first  # the first epoch's checkpoint is complete: stop the job
    while not trigger.exists() and all(n.poll() is None for n in nodes):  # bounded by the test's timeout
        psutil.wait_procs([psutil.Process(n.pid) for n in nodes], timeout=0.01)
    ranks = ranks_of(nodes)
    assert trigger.exists() and len(ranks) == NODES * PER_NODE, wait_nodes(nodes)[1]
    for rank in ranks:
        os.kill(rank.pid, signal.SIGUSR1)
    codes, output = wait_nodes(nodes)
    assert all(code != 0 for code in codes), output  # torchrun reports its workers' 138 as a failure
    assert "exitcode  : 138" in output, output
    result = json.loads((out / "run" / "result.json").read_text())
    assert len(result["epochs"]) < 4, result  # stopped before the end

    codes, output = wait_nodes(start_nodes([*args, "learner.checkpoint=last"], out, data))
    assert codes == [0, 0], output
    resumed = out / "run"
    assert f"resuming from {resumed / 'checkpoint'}" in (resumed / "experiment.log").read_text()
    assert json.loads((resumed / "result.json").read_text()) == json.loads((whole / "result.json").read_text())
    expected = param_bytes(whole / "model.mpk")
    for path in (resumed / "model.mpk", resumed / "checkpoint" / "model-4.mpk"):
        got = param_bytes(path)
        assert got.keys() == expected.keys()
        for key, value in got.items():
            if trainer == "fsdp":
                assert value == expected[key], key
            else:  # a missed or repeated Adam step (lr 1e-4) moves weights by ~1e-4
                np.testing.assert_allclose(np.frombuffer(value, np.float32), np.frombuffer(expected[key], np.float32),
                                           rtol=1e-6, atol=1e-7, err_msg=key)
