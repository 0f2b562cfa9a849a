"""Structured configs for the app, registered in Hydra's ConfigStore.

The model and optimizer options *are* burnlike's `@config` classes (`ModelConfig`, `AdamConfig` …),
so a typo or a wrong type in an override is rejected by Hydra with the key named, before training.
These classes hold every default of the app's config; a group option's YAML (burnlike/conf/) holds
only what that option changes (tests/test_app.py checks that none repeats or contradicts a default).
"""

from __future__ import annotations

from typing import Any

from omegaconf import MISSING

from burnlike.app.data import CsvDataConfig, DataConfig, ImageFolderDataConfig, ShakespeareCharDataConfig
from burnlike.app.scheduler import CosineScheduler, WarmupCosineScheduler
from burnlike.config import config
from burnlike.models.cnn import CnnConfig
from burnlike.models.gpt import GptConfig
from burnlike.models.mlp import MlpConfig
from burnlike.models.mnist import ModelConfig
from burnlike.models.tabular import TabularMlpConfig
from burnlike.optim.adagrad import AdaGradConfig
from burnlike.optim.adan import AdanConfig
from burnlike.optim.lbfgs import LBFGSConfig
from burnlike.optim.muon import MuonConfig
from burnlike.optim.optimizer import AdamConfig, AdamWConfig, SgdConfig
from burnlike.optim.rmsprop import RmsPropConfig


@config
class AdamOptimizer(AdamConfig):
    lr: float = 1e-4  # Burn passes the learning rate to build(); the app keeps it with the optimizer


@config
class AdamWOptimizer(AdamWConfig):
    lr: float = 1e-4  # the learning rate (Burn's build(model, optim, lr))


@config
class SgdOptimizer(SgdConfig):
    lr: float = 1e-2  # the learning rate (Burn's build(model, optim, lr))


@config
class AdaGradOptimizer(AdaGradConfig):
    lr: float = 1e-2  # the learning rate (Burn's build(model, optim, lr))


@config
class RmsPropOptimizer(RmsPropConfig):
    lr: float = 1e-3  # the learning rate (Burn's build(model, optim, lr))


@config
class MuonOptimizer(MuonConfig):
    lr: float = 2e-2  # the learning rate (Burn's build(model, optim, lr))
    # the app's models have biases and convolution kernels, which Muon does not take: Burn's AdamW
    # updates them (optimizer.aux_adamw=null restores Burn's behaviour: refuse such models)
    aux_adamw: AdamWConfig | None = AdamWConfig()


@config
class AdanOptimizer(AdanConfig):
    lr: float = 1e-3  # the learning rate (Burn's build(model, optim, lr))


@config
class LBFGSOptimizer(LBFGSConfig):
    lr: float = 1.0  # the step size of each L-BFGS update (Burn's build(model, optim, lr))


@config
class TrainerConfig:
    """The `lightning.Trainer` arguments the app sets; `extra` passes anything else through."""

    accelerator: str = "auto"  # Lightning's choice: a GPU when there is one, else the CPU (trainer=cpu forces it)
    devices: Any = 1  # how many devices (2), which ([0, 2]) or all of them (-1), as Lightning takes it
    strategy: str = "auto"  # Lightning's strategy: auto, ddp, ddp_spawn, fsdp, … (trainer=ddp sets ddp)
    precision: str = "32-true"  # Lightning's precision: 32-true, bf16-mixed, 16-mixed, 64-true, …
    num_nodes: int = 1  # machines in the job; each runs trainer.devices processes
    fast_dev_run: bool = False  # one train and one valid batch, no checkpoints: does it wire up?
    limit_train_batches: float | None = None  # a share (0.25) or a count (10) of the train batches; null: all
    limit_val_batches: float | None = None  # a share (0.25) or a count (10) of the valid batches; null: all
    # float32 matmuls on tensor cores: highest (torch's default: full fp32) | high (TF32) | medium (bf16)
    matmul_precision: str | None = None  # null: leave torch's setting as it is
    extra: dict[str, Any] = {}  # any other lightning.Trainer argument: trainer.extra.max_steps=100


@config
class LearnerConfig:
    num_epochs: int = 10  # epochs to train (Burn's num_epochs; Lightning's max_epochs)
    # in place of num_epochs: this many iterations (batches) in all, in epochs of valid_every batches
    num_iterations: int | None = None
    # validate every N batches: an epoch (logs, checkpoint, summary row) is N batches of a train
    # loader that continues across epochs; null: an epoch is a pass over the train data
    valid_every: int | None = None
    recorder: str = "compact"  # compact | default | mpk_gz | json | json_gz | bin | bin_gz
    # what the train split logs: any of Accuracy, Loss, "Learning Rate", "Iteration Speed" (valid: Accuracy, Loss)
    metrics: list[str] = ["Accuracy", "Loss"]
    checkpointing: bool = True  # checkpoint/model-N.<ext>, Burn's strategy: last 2 + best valid loss
    async_save: bool = False  # write checkpoints on a writer thread (training waits only for the tensors' copy)
    early_stopping_patience: int | None = None  # stop after N epochs without a lower valid loss; null: never
    checkpoint: str | None = None  # resume from epoch N's checkpoint, or "last" (newest complete, mid-epoch too), in the run dir (hydra.run.dir=<it>)
    grads_accumulation: int = 1  # one optimizer step per N batches, their gradients summed (Burn's rule)
    summary: bool = True  # Burn's Learner summary table at the end
    progress_bar: bool = True  # the live view in a terminal, a line per epoch elsewhere; false: neither
    # Burn's device strategy over trainer.accelerator/devices/num_nodes (null: trainer.strategy decides)
    strategy: str | None = None  # single | multi | multi_sharded | ddp
    cuda_graph: bool = False  # LearnerBuilder.cuda_graph(): capture the train step in a CUDA graph (eager without CUDA)
    # seconds a collective waits for the other ranks before the process group fails (DDP, FSDP); null: torch's 30 min
    dist_timeout: float | None = None
    # the run dir's .lock: another job's lock without a heartbeat for this many seconds is stale (0: no lock)
    lock_timeout: float = 120.0


@config
class LoggerConfig:
    """Experiment trackers (Lightning loggers) that get the metric store's epoch values, the resolved
    config and the git commit; a resumed run continues their runs."""

    kinds: list[str] = ["csv"]  # any of csv, tensorboard, mlflow, wandb
    every_n_steps: int = 50  # running train values every N batches as train_step/<Metric> (0: epochs only)
    name: str = "burnlike"  # MLflow experiment, W&B project
    mlflow_tracking_uri: str | None = None  # null: a file store in the run dir (mlruns/)
    wandb_offline: bool | None = None  # null: offline unless WANDB_API_KEY is set


@config
class AppConfig:
    model: Any = MISSING
    data: DataConfig = DataConfig()
    optimizer: Any = MISSING
    scheduler: Any = None  # the learning rate over the run (scheduler=warmup_cosine...); null: optimizer.lr throughout
    trainer: TrainerConfig = TrainerConfig()
    learner: LearnerConfig = LearnerConfig()
    logger: LoggerConfig = LoggerConfig()
    seed: int = 42  # Burn's B::seed: Python's, NumPy's and torch's random generators
    # where the run's artifacts go (checkpoints, epoch logs, CSV/TensorBoard logs, result.json,
    # model): null is Hydra's run dir; any fsspec URL (s3://bucket/runs/a, gs://…, memory://…).
    # Hydra's own files (.hydra/, train.log) stay in its run dir, a local folder.
    artifacts: str | None = None
    # what train.py returns to sweepers: "<split>/<Metric>", its best epoch in the metric's own direction
    optimized_metric: str = "valid/Accuracy"


SCHEMAS: dict[str, type] = {
    "app": AppConfig,
    "model/mnist": ModelConfig,
    "model/mlp": MlpConfig,
    "model/cnn": CnnConfig,
    "model/tabular": TabularMlpConfig,
    "model/gpt": GptConfig,
    "data/image_folder": ImageFolderDataConfig,
    "data/csv": CsvDataConfig,
    "data/shakespeare_char": ShakespeareCharDataConfig,
    "optimizer/adam": AdamOptimizer,
    "optimizer/adamw": AdamWOptimizer,
    "optimizer/sgd": SgdOptimizer,
    "optimizer/adagrad": AdaGradOptimizer,
    "optimizer/rmsprop": RmsPropOptimizer,
    "optimizer/muon": MuonOptimizer,
    "optimizer/adan": AdanOptimizer,
    "optimizer/lbfgs": LBFGSOptimizer,
    "scheduler/cosine": CosineScheduler,
    "scheduler/warmup_cosine": WarmupCosineScheduler,
}


def register_configs() -> None:
    """Store the schemas under `schema/...`, not in the option groups themselves, so they never show
    up as choices (`model=mnist_schema`); a group's YAML pulls its schema in with
    `- /schema/model/mnist@_here_` (idempotent: Hydra's store overwrites). Also registers the
    resolver `${burnlike.sweep_direction:${optimized_metric}}` (maximize/minimize, the metric's own)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from burnlike.app.run import sweep_direction

    OmegaConf.register_new_resolver("burnlike.sweep_direction", sweep_direction, replace=True)
    cs = ConfigStore.instance()
    for path, node in SCHEMAS.items():
        group, _, name = path.rpartition("/")
        cs.store(group="schema/" + group if group else "schema", name=name, node=node)
