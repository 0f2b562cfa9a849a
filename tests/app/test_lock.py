"""`burnlike.app.lock`: one job at a time holds a run dir. The lock names its holder; a live
holder's lock refuses the next job with that name; a lock whose process has ended, whose job id is
this job's (a requeue), or whose heartbeat is older than the timeout is taken over with a warning;
a job removes only its own lock; object stores hold a lease object the same way."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from burnlike.app.lock import LOCK, Holder, RunDirBusy, RunDirLock, job_id, read_holder
from burnlike.record.format.location import as_path


@pytest.fixture
def other_process():
    """A live process of this host that isn't the test's: `.pid`; killed after the test."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield child
    child.kill()
    child.wait()


@pytest.fixture(autouse=True)
def no_job_id(monkeypatch):
    """The tests choose the scheduler's job id themselves."""
    for name in ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID"):
        monkeypatch.delenv(name, raising=False)


def write_lock(folder, *, pid: int, host: str | None = None, job: str | None = None, age: float = 0.0) -> Holder:
    """A lock as another job wrote it, its heartbeat `age` seconds old."""
    now = time.time()
    holder = Holder(host or socket.gethostname(), pid, job, now - age - 5, now - age, "their-token")
    (as_path(folder) / LOCK).write_bytes(json.dumps(holder.__dict__).encode())
    return holder


def test_a_job_holds_the_lock_naming_itself_and_removes_it_at_the_end(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    with RunDirLock(tmp_path, timeout=60) as lock:
        holder = read_holder(tmp_path / LOCK)
        assert holder == lock.holder
        assert (holder.host, holder.pid, holder.job) == (socket.gethostname(), os.getpid(), "4242")
        assert sorted(p.name for p in tmp_path.iterdir()) == [LOCK]  # the staged copy is gone
    assert not (tmp_path / LOCK).exists()


def test_a_second_job_stops_naming_the_live_holder(tmp_path, other_process):
    write_lock(tmp_path, pid=other_process.pid, job="77")
    with pytest.raises(RunDirBusy) as busy:
        RunDirLock(tmp_path, timeout=60).acquire()
    message = str(busy.value)
    assert "\n" not in message
    assert f"{tmp_path} is in use by another job: pid {other_process.pid} on {socket.gethostname()}, job 77" in message
    assert "learner.lock_timeout" in message
    assert read_holder(tmp_path / LOCK).token == "their-token"  # their lock is left as it was


def test_the_lock_of_a_process_that_ended_is_taken_over_with_a_warning(tmp_path, other_process, caplog):
    write_lock(tmp_path, pid=other_process.pid)
    other_process.send_signal(signal.SIGKILL)
    other_process.wait()
    with caplog.at_level(logging.WARNING, "burnlike.app"), RunDirLock(tmp_path, timeout=60) as lock:
        assert read_holder(tmp_path / LOCK).token == lock.holder.token
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"taking over the lock of pid {other_process.pid}" in warning and "its process has ended" in warning


def test_a_requeued_job_takes_over_its_own_earlier_instances_lock(tmp_path, other_process, monkeypatch, caplog):
    """The same SLURM job id: the job's first instance, still draining, doesn't keep it out."""
    write_lock(tmp_path, pid=other_process.pid, job="900")
    monkeypatch.setenv("SLURM_JOB_ID", "900")
    with caplog.at_level(logging.WARNING, "burnlike.app"), RunDirLock(tmp_path, timeout=60):
        pass
    assert "it is this job's (job 900), from before a requeue" in caplog.text
    monkeypatch.setenv("SLURM_JOB_ID", "901")  # another job: refused
    write_lock(tmp_path, pid=other_process.pid, job="900")
    with pytest.raises(RunDirBusy):
        RunDirLock(tmp_path, timeout=60).acquire()


def test_another_hosts_lock_is_stale_once_its_heartbeat_is_older_than_the_timeout(tmp_path):
    lock = RunDirLock(tmp_path, timeout=60)
    recent = write_lock(tmp_path, pid=1, host="node-7", age=50)
    assert lock.stale(recent) is None  # its pid means nothing here: only the heartbeat tells
    with pytest.raises(RunDirBusy, match="pid 1 on node-7 .*last heartbeat 5[0-9] s ago"):
        lock.acquire()
    old = write_lock(tmp_path, pid=1, host="node-7", age=61)
    assert lock.stale(old).startswith("no heartbeat for 61 s")
    with lock:
        assert read_holder(tmp_path / LOCK).host == socket.gethostname()


def test_an_unreadable_lock_is_stale(tmp_path, caplog):
    (tmp_path / LOCK).write_bytes(b"\x00not json")
    with caplog.at_level(logging.WARNING, "burnlike.app"), RunDirLock(tmp_path, timeout=60):
        pass
    assert "an unreadable lock file: it can't be read" in caplog.text


def test_the_heartbeat_renews_the_lock_while_it_is_this_jobs_and_stops_once_it_is_not(tmp_path, caplog):
    with RunDirLock(tmp_path, timeout=60) as lock:
        before = read_holder(tmp_path / LOCK).heartbeat
        assert lock.beat()
        assert read_holder(tmp_path / LOCK).heartbeat > before
        write_lock(tmp_path, pid=1, host="node-7")  # taken over elsewhere (this job looked dead)
        with caplog.at_level(logging.WARNING, "burnlike.app"):
            assert not lock.beat()
        assert "the lock is no longer this job's (pid 1 on node-7" in caplog.text
    assert read_holder(tmp_path / LOCK).host == "node-7"  # release leaves a lock that isn't its own


def test_the_heartbeat_runs_on_its_own_thread_every_quarter_of_the_timeout(tmp_path):
    with RunDirLock(tmp_path, timeout=0.2) as lock:
        first = read_holder(tmp_path / LOCK).heartbeat
        while read_holder(tmp_path / LOCK).heartbeat == first:  # bounded by the test's timeout
            time.sleep(0.01)
        assert lock._beating is not None and lock._beating.is_alive()
    assert lock._beating is None


def test_a_lease_object_on_an_object_store_names_its_holder_and_refuses_a_second_job(other_process):
    folder = as_path(f"memory://lock-{os.getpid()}/run")
    with RunDirLock(folder, timeout=60) as lock:
        assert read_holder(folder / LOCK) == lock.holder
        theirs = RunDirLock(folder, timeout=60)
        theirs.holder = Holder(socket.gethostname(), other_process.pid, None, 0.0, time.time(), "theirs")
        with pytest.raises(RunDirBusy, match=f"pid {os.getpid()} on "):
            theirs.acquire()
    assert not (folder / LOCK).exists()


def test_no_job_id_outside_a_scheduler_and_the_schedulers_own_inside_one(monkeypatch):
    assert job_id() is None
    monkeypatch.setenv("PBS_JOBID", "12.server")
    assert job_id() == "12.server"


def test_a_timeout_of_zero_or_less_is_refused(tmp_path):
    with pytest.raises(ValueError, match="timeout must be > 0 seconds, got 0"):
        RunDirLock(Path(tmp_path), timeout=0)
