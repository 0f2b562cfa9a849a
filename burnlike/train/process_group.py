"""The torch.distributed process group of a distributed fit: ending it, and telling which rank
stopped when a collective fails.

Why: PyTorch advises a DDP script to end its process group itself. Left to interpreter shutdown,
gloo's threads are now and then torn down mid-way: a finished 2-process CPU fit then aborts,
"terminate called without an active exception" (exit -6), in the app and through
`SupervisedTraining(...).launch` alike. Lightning leaves the group up after `fit` (a `test` may
follow), so `Learner.fit` arranges for it to end at exit, and the app's jobs end it right after
their fit.

When a rank dies (SIGKILL, out of memory), the others fail in their next collective: gloo at once
("Connection closed by peer"), NCCL after the process group's timeout (`learner.dist_timeout`).
`Peers` knows every rank's host and pid from the fit's start, so each surviving rank can name the
one that stopped instead of printing a transport's traceback.
"""

from __future__ import annotations

import atexit
import gc
import os

import lightning as L

from burnlike.record.format.files import process_alive

_registered = False


def end_process_group(barrier: bool = False) -> None:
    """Ends this process's group if one is up; first a `barrier` when every rank is known to reach
    it (after a fit), none otherwise (after an error, or at exit, other ranks may be gone). A group
    still referenced (FSDP2's device mesh holds its own) is then collected at once: left to the
    interpreter's last teardown, gloo's threads can abort the process as it exits."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        if barrier:
            dist.barrier()
        dist.destroy_process_group()
        gc.collect()  # the groups FSDP2's device mesh still holds are freed now, their threads joined


def end_at_exit() -> None:
    """Ends the group, if still up, when the interpreter exits (registered once per process)."""
    global _registered
    if not _registered:
        atexit.register(end_process_group)
        _registered = True


class RankStopped(SystemExit):
    """Another rank of the job stopped (its process ended, or can't be reached): this rank stops
    too, with exit status 1, after one line naming it, the newest checkpoint and how to resume."""


class Peers(L.Callback):
    """Every rank's host and process id, exchanged as the fit sets up (the process group is up by
    then): when a collective fails, `stopped()` names the ranks whose processes have ended. Each
    rank's process also ends its group at exit (`end_at_exit`): the ranks ddp_spawn starts run
    none of the launching process's code, and one left with its gloo group up at interpreter
    shutdown can abort instead of exiting with its status (a preempted rank's 143)."""

    def __init__(self) -> None:
        self.table: dict[int, tuple[str, int]] = {}
        self.rank = 0

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if trainer.world_size > 1:
            end_at_exit()
            self.exchange()

    def exchange(self) -> None:
        """Every rank calls this at the same point (a collective), with the group up."""
        import socket

        import torch.distributed as dist

        self.table = {}
        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
            return
        gathered: list[list[str]] = [[] for _ in range(dist.get_world_size())]
        dist.all_gather_object(gathered, [socket.gethostname(), str(os.getpid())])
        self.rank = dist.get_rank()
        self.table = {r: (host, int(pid)) for r, (host, pid) in enumerate(gathered)}

    def stopped(self) -> list[str]:
        """The other ranks that have stopped, as `rank R (pid P on HOST)`; ranks on other hosts are
        named as unknown when none of this host's has stopped (their processes can't be seen)."""
        import socket

        host = socket.gethostname()
        others = {r: hp for r, hp in self.table.items() if r != self.rank}
        ended = [f"rank {r} (pid {p} on {h})" for r, (h, p) in sorted(others.items()) if h == host and not process_alive(p)]
        if ended or not others:
            return ended
        remote = sorted(r for r, (h, _) in others.items() if h != host)
        return [f"rank {r} (on {others[r][0]})" for r in remote]


COLLECTIVE_FAILURES = ("connection closed by peer", "connection reset by peer", "broken pipe", "timed out",
                       "timeout", "nccl", "gloo", "processgroup")


def is_collective_failure(error: BaseException) -> bool:
    """Whether `error` is a collective or process-group failure (a peer gone, a timeout), not a
    bug of the step: torch's distributed error types, or a RuntimeError from gloo/NCCL."""
    import torch.distributed as dist

    kinds = tuple(k for k in (getattr(dist, "DistError", None),) if isinstance(k, type))
    if kinds and isinstance(error, kinds):
        return True
    text = str(error).lower()
    return isinstance(error, RuntimeError) and any(word in text for word in COLLECTIVE_FAILURES)
