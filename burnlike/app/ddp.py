"""DDP under a Hydra multirun.

Lightning's `ddp` launcher starts ranks 1..N-1 by re-running `sys.argv` (plus `hydra.run.dir`),
so inside `-m` each child re-launches the whole sweep (Lightning #11300, #18175). This replaces the
child command, for multirun jobs only, with the current job's own overrides in RUN mode and the
job's output dir, the approach of hydra #2070.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

log = logging.getLogger("burnlike.app")

_CONFIG_FLAGS = ("--config-path", "--config-name", "--config-dir", "-cp", "-cn", "-cd")


def job_subprocess_cmd(local_rank: int) -> tuple[Sequence[str], str]:
    from hydra.core.hydra_config import HydraConfig
    from hydra.utils import get_original_cwd, to_absolute_path

    import __main__

    hc = HydraConfig.get()
    if __main__.__spec__ is None:
        command = [sys.executable, to_absolute_path(sys.argv[0])]
    else:
        command = [sys.executable, "-m", __main__.__spec__.name]
    argv = sys.argv[1:]
    for i, arg in enumerate(argv):  # keep --config-name/--config-path/--config-dir as given
        if arg.startswith(_CONFIG_FLAGS):
            command.append(arg)
            if "=" not in arg and i + 1 < len(argv):
                command.append(argv[i + 1])
    command += list(hc.overrides.task)
    # RUN mode even where a config sets `hydra.mode: MULTIRUN` (hparams_search=...): one job, this dir
    command += ["hydra.mode=RUN", f'hydra.run.dir="{hc.runtime.output_dir}"',
                f"hydra.job.name=train_ddp_process_{local_rank}", "hydra.output_subdir=null"]
    return command, get_original_cwd()


NO_HOOK = "this Lightning has no Hydra launcher hook"
HYDRA_UNSEEN = ("Lightning doesn't see hydra-core installed (importable without its package metadata), "
                "so its launcher would re-run the whole sweep in every rank")


def patch_for_multirun() -> str | None:
    """Make Lightning's ddp launcher start this job's ranks, not the sweep (idempotent).

    Returns why it can't (the caller then falls back to ddp_spawn), None once patched. Lightning
    calls the hook only where package metadata says hydra-core is installed: a Hydra on PYTHONPATH
    alone (vendored, copied) gets its plain command, the sweep's argv (seen on a GPU machine)."""
    from burnlike._lightning import hydra_seen_by_launcher, rank_command_hook, set_rank_command_hook

    try:
        hook = rank_command_hook()
    except ImportError:  # pragma: no cover - a Lightning without the module
        return NO_HOOK
    if hook is None:
        return NO_HOOK
    if not hydra_seen_by_launcher():
        return HYDRA_UNSEEN
    if hook is not job_subprocess_cmd:
        set_rank_command_hook(job_subprocess_cmd)
        log.debug("multirun: DDP ranks are launched for this job only (not the whole sweep)")
    return None
