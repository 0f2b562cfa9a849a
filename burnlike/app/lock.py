"""The run dir's owner: one job at a time writes a run's checkpoints, logs and results.

The first job holds `<artifact dir>/.lock`, a small JSON record of who holds it (host, pid, the
scheduler's job id, when it started) and a heartbeat the holder rewrites every quarter of the
timeout. Taking it is one atomic step: on a local or shared disk a hard link of a complete file
(it fails if the lock exists), on an object store a put followed by a read-back (the lease object:
the last writer wins, and each writer sees whether it did). A second job on the same dir stops at
once with one line naming the holder. A lock is stale, and taken over with a warning, when its
process has ended (same host), when its job id is this job's (a requeued job, whose first instance
was stopped), or when its heartbeat is older than the timeout (a holder on a host that crashed).

Only a job's rank zero takes the lock: the other ranks of one job share the run dir by design.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass

from burnlike.record.format.files import atomic_write, process_alive
from burnlike.record.format.location import AnyPath, RemotePath

log = logging.getLogger("burnlike.app")

LOCK = ".lock"
JOB_ID_VARIABLES = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID")  # SLURM, PBS/Torque, LSF, SGE


class RunDirBusy(Exception):
    """Another live job holds the run dir's lock (the message names it)."""


@dataclass(frozen=True)
class Holder:
    """Who holds a run dir: written into the lock and read back by the next job."""

    host: str
    pid: int
    job: str | None
    started: float
    heartbeat: float
    token: str

    def describe(self, now: float) -> str:
        job = f", job {self.job}" if self.job else ""
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        return (f"pid {self.pid} on {self.host}{job} (since {started}, last heartbeat "
                f"{max(0.0, now - self.heartbeat):.0f} s ago)")


def job_id() -> str | None:
    """The scheduler's id of this job (a requeued SLURM job keeps its id), None outside one."""
    return next((os.environ[k] for k in JOB_ID_VARIABLES if os.environ.get(k)), None)


def read_holder(path: AnyPath) -> Holder | None:
    """The lock's holder; None when there is no lock or it is unreadable (a torn or foreign file)."""
    try:
        data = json.loads(path.read_bytes())
        return Holder(str(data["host"]), int(data["pid"]), data.get("job"), float(data["started"]),
                      float(data["heartbeat"]), str(data["token"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class RunDirLock:
    """`with RunDirLock(folder, timeout):` holds `folder/.lock` for the block, its heartbeat kept by
    a daemon thread; `timeout` seconds without a heartbeat make a lock stale."""

    def __init__(self, folder: AnyPath, timeout: float = 120.0) -> None:
        if timeout <= 0:
            raise ValueError(f"a run dir lock's timeout must be > 0 seconds, got {timeout}")
        self.path = folder / LOCK
        self.timeout = timeout
        now = time.time()
        self.holder = Holder(socket.gethostname(), os.getpid(), job_id(), now, now, uuid.uuid4().hex)
        self._stop = threading.Event()
        self._beating: threading.Thread | None = None

    def __enter__(self) -> RunDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock, or raise `RunDirBusy` naming the live job that holds it."""
        if not self._create():
            theirs = read_holder(self.path)
            why = self.stale(theirs)
            if why is None:
                assert theirs is not None
                raise RunDirBusy(
                    f"{self.path.parent} is in use by another job: {theirs.describe(time.time())}. Wait for it to "
                    f"end, or give this job a run dir of its own (hydra.run.dir=..., artifacts=...). Its lock "
                    f"{self.path} is taken over once that process has ended, or after {self.timeout:.0f} s "
                    "without a heartbeat (learner.lock_timeout)")
            log.warning("run dir %s: taking over the lock of %s: %s", self.path.parent,
                        theirs.describe(time.time()) if theirs is not None else "an unreadable lock file", why)
            self._write(self.holder)
            if not self._mine():
                raise RunDirBusy(f"{self.path.parent}: another job took the stale lock {self.path} at the same "
                                 f"moment: {self._describe_current()}")
        self._beating = threading.Thread(target=self._beat, name="burnlike-run-lock", daemon=True)
        self._beating.start()

    def stale(self, theirs: Holder | None, now: float | None = None) -> str | None:
        """Why the lock `theirs` may be taken over, None while its job lives."""
        now = time.time() if now is None else now
        if theirs is None:
            return "it can't be read"
        if theirs.job is not None and theirs.job == self.holder.job:
            return f"it is this job's (job {theirs.job}), from before a requeue"
        if theirs.host == self.holder.host and not process_alive(theirs.pid):
            return "its process has ended"
        if now - theirs.heartbeat > self.timeout:
            return f"no heartbeat for {now - theirs.heartbeat:.0f} s (more than {self.timeout:.0f} s)"
        return None

    def release(self) -> None:
        """Stop the heartbeat and remove the lock if it is still this job's."""
        self._stop.set()
        if self._beating is not None:
            self._beating.join()
            self._beating = None
        if self._mine():
            with contextlib.suppress(OSError):
                self.path.unlink(missing_ok=True)

    def beat(self) -> bool:
        """Rewrite the heartbeat if the lock is still this job's; whether it is."""
        if not self._mine():
            log.warning("run dir %s: the lock is no longer this job's (%s)", self.path.parent,
                        self._describe_current())
            return False
        self.holder = Holder(**{**asdict(self.holder), "heartbeat": time.time()})
        self._write(self.holder)
        return True

    def _beat(self) -> None:
        while not self._stop.wait(self.timeout / 4):
            try:
                if not self.beat():
                    return
            except OSError as e:  # a storage hiccup: the next beat tries again
                log.warning("run dir %s: the lock's heartbeat could not be written (%s)", self.path.parent, e)

    def _mine(self) -> bool:
        current = read_holder(self.path)
        return current is not None and current.token == self.holder.token

    def _describe_current(self) -> str:
        current = read_holder(self.path)
        return current.describe(time.time()) if current is not None else "no readable lock"

    def _encoded(self, holder: Holder) -> bytes:
        return (json.dumps(asdict(holder), indent=1) + "\n").encode()

    def _write(self, holder: Holder) -> None:
        atomic_write(self.path, self._encoded(holder))

    def _create(self) -> bool:
        """Write the lock if there is none, in one step; whether this call wrote it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(self.path, RemotePath):  # a lease object: put it, then see whose it is
            if self.path.exists():
                return False
            self._write(self.holder)
            return self._mine()
        staged = self.path.with_name(f"{LOCK}.{self.holder.token}")
        staged.write_bytes(self._encoded(self.holder))
        try:
            os.link(staged, self.path)  # fails if a lock exists; the lock is never seen half-written
            return True
        except FileExistsError:
            return False
        finally:
            staged.unlink(missing_ok=True)
