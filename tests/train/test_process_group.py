"""`burnlike.train.process_group`: the exit handler ends a DDP process group without waiting at a
barrier (at exit the other ranks may be gone), and does nothing when no group is up; it is
registered once per process, however many fits the process runs. After a collective fails, `Peers`
names the ranks whose processes ended (those of this host; another host's when none here did), and
a process group's failure is told from an error of the step."""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys

import pytest

from burnlike.train import process_group
from burnlike.train.process_group import Peers, end_at_exit, end_process_group, is_collective_failure


def test_the_exit_handler_ends_a_group_without_a_barrier_and_does_nothing_without_one(one_rank_group, monkeypatch):
    """With no group up (the app's job ended it already, or none was started) it does nothing."""
    dist = one_rank_group
    barriers: list[int] = []
    original = dist.barrier
    monkeypatch.setattr(dist, "barrier", lambda *a, **k: barriers.append(1) or original(*a, **k))
    end_process_group()  # as atexit calls it
    assert not dist.is_initialized() and barriers == []
    end_process_group()  # nothing up: no error
    end_process_group(barrier=True)
    assert barriers == []


def test_the_exit_handler_is_registered_once_for_many_fits(monkeypatch):
    """A process that runs a sweep's fits one after another keeps one handler, not one per fit."""
    registered: list[object] = []
    monkeypatch.setattr(process_group, "_registered", False)
    monkeypatch.setattr(atexit, "register", registered.append)
    for _ in range(3):
        end_at_exit()
    assert registered == [end_process_group]


# --- naming the rank that stopped -----------------------------------------------------------------
@pytest.fixture
def sleeper():
    """`sleeper()`: a live process of this host (a rank, as far as a table can tell); all killed after."""
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]))
        return started[-1]

    yield start
    for child in started:
        child.kill()
        child.wait()


def test_the_ranks_whose_processes_ended_are_named_with_their_pid_and_host(sleeper):
    host = socket.gethostname()
    one, two = sleeper(), sleeper()
    peers = Peers()
    peers.table = {0: (host, os.getpid()), 1: (host, one.pid), 2: (host, two.pid)}
    assert peers.stopped() == []  # every rank alive: none named
    two.kill()
    os.waitid(os.P_PID, two.pid, os.WEXITED | os.WNOWAIT)  # it has exited; not reaped: a zombie, ended all the same
    assert peers.stopped() == [f"rank 2 (pid {two.pid} on {host})"]
    peers.rank = 2  # seen from rank 2: its own entry is never named
    assert peers.stopped() == []


def test_ranks_of_other_hosts_are_named_when_none_of_this_hosts_ranks_stopped():
    """Their processes can't be seen from here: they are the ones that may have stopped."""
    host = socket.gethostname()
    peers = Peers()
    peers.table = {0: (host, os.getpid()), 1: ("node-9", 1), 2: ("node-9", 2)}
    assert peers.stopped() == ["rank 1 (on node-9)", "rank 2 (on node-9)"]


def test_a_one_rank_group_exchanges_no_table(one_rank_group):
    peers = Peers()
    peers.exchange()
    assert peers.table == {}


@pytest.mark.parametrize(("error", "collective"), [
    (RuntimeError("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:5"), True),
    (RuntimeError("Read error [127.0.0.1]:2972: Connection reset by peer"), True),
    (RuntimeError("NCCL communicator was aborted on rank 1"), True),
    (RuntimeError("Watchdog caught collective operation timeout"), True),
    (RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)"), False),
    (ValueError("Connection reset by peer"), False),  # not the process group's kind of error
])
def test_a_collective_failure_is_told_from_a_bug_of_the_step(error, collective):
    assert is_collective_failure(error) is collective


def test_torchs_distributed_error_types_are_collective_failures():
    import torch.distributed as dist

    assert is_collective_failure(dist.DistBackendError("anything"))
