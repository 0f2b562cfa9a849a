"""Train with burnlike, composed by Hydra.

    python train.py model=mnist trainer.devices=1
    python train.py -m optimizer.lr=1e-3,1e-4            # a sweep: one run dir per job
    python train.py trainer=ddp trainer.devices=2        # DDP on CPU (gloo) or GPUs (nccl)
    python train.py hydra.run.dir=<run dir> learner.checkpoint=3   # resume a run
    python train.py --cfg job                            # print the composed config

Groups: model (mnist, mlp, cnn, tabular), data (mnist, image_folder, csv), optimizer (adam, adamw, sgd), trainer (default, cpu, gpu,
ddp, ddp_spawn), learner (default), hparams_search (mnist_optuna), debug (fast, limit).
MNIST is read from data.root (default $BURNLIKE_DATA, else ./data): the folder holding MNIST/raw/.
"""

from __future__ import annotations

import os

import hydra
from omegaconf import DictConfig

from burnlike.app.schema import register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    # heavy imports (torch, lightning) happen here, so --help and --cfg job stay fast
    from burnlike.app.run import AppConfigError, fail, is_rank_zero, run
    from burnlike.app.tree import print_config
    from burnlike.data import MnistFormatError, MnistNotFoundError
    from burnlike.data.dataset import DatasetError
    from burnlike.record import RecordError

    if is_rank_zero():  # DDP children compose the same config: print it once
        print_config(cfg)
    try:
        return run(cfg)
    except (AppConfigError, MnistNotFoundError, MnistFormatError, DatasetError, RecordError) as e:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        fail(str(e))
        raise  # unreachable: fail() exits


if __name__ == "__main__":
    main()
