"""Ending the torch.distributed process group a distributed fit started.

Why: PyTorch advises a DDP script to end its process group itself. Left to interpreter shutdown,
gloo's threads are now and then torn down mid-way: a finished 2-process CPU fit then aborts,
"terminate called without an active exception" (exit -6), in the app and through
`SupervisedTraining(...).launch` alike. Lightning leaves the group up after `fit` (a `test` may
follow), so `Learner.fit` arranges for it to end at exit, and the app's jobs end it right after
their fit.
"""

from __future__ import annotations

import atexit

_registered = False


def end_process_group(barrier: bool = False) -> None:
    """Ends this process's group if one is up; first a `barrier` when every rank is known to reach
    it (after a fit), none otherwise (after an error, or at exit, other ranks may be gone)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        if barrier:
            dist.barrier()
        dist.destroy_process_group()


def end_at_exit() -> None:
    """Ends the group, if still up, when the interpreter exits (registered once per process)."""
    global _registered
    if not _registered:
        atexit.register(end_process_group)
        _registered = True
