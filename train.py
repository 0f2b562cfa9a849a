"""Train with burnlike, composed by Hydra.

    python train.py model=mnist trainer.devices=1
    python train.py -m optimizer.lr=1e-3,1e-4            # a sweep: one run dir per job
    python train.py trainer=ddp trainer.devices=2        # DDP on CPU (gloo) or GPUs (nccl)
    python train.py hydra.run.dir=<run dir> learner.checkpoint=3   # resume a run
    python train.py --cfg job                            # print the composed config

The groups, their options and every key: `python train.py --help` (and docs/hydra.md).
MNIST is read from data.root (default $BURNLIKE_DATA, else ./data): the folder holding MNIST/raw/.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from burnlike.app.schema import register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    # heavy imports (torch, lightning) happen here, so --help and --cfg job stay fast
    from burnlike.app.console import discard_run_dir, fail
    from burnlike.app.lock import RunDirBusy
    from burnlike.app.run import AppConfigError, check_devices, is_rank_zero, output_dir, run, validate
    from burnlike.app.tree import print_config
    from burnlike.data import MnistFormatError, MnistNotFoundError
    from burnlike.data.dataset import DatasetError
    from burnlike.record import RecordError, SaveError

    try:
        validate(cfg)  # a value training can't use: its one line comes before the config's
        check_devices(cfg)
        if is_rank_zero():  # DDP children compose the same config: print it once
            print_config(cfg)
        return run(cfg)
    except RunDirBusy as e:  # another job's run dir: left as it is
        fail(str(e))
        raise  # unreachable: fail() exits
    except (AppConfigError, MnistNotFoundError, MnistFormatError, DatasetError, RecordError, SaveError) as e:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        if is_rank_zero():  # nothing trained: leave no run dir behind
            from hydra.utils import get_original_cwd

            discard_run_dir(output_dir(), Path(get_original_cwd()))
        fail(str(e))
        raise  # unreachable: fail() exits


if __name__ == "__main__":
    from burnlike.app.console import fail
    from burnlike.app.overrides import override_error

    if (problem := override_error(sys.argv[1:])) is not None:  # before Hydra: one line naming the right key
        fail(problem)
    main()
