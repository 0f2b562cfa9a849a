"""Build a training run from a composed Hydra config, with the same public calls a user writes."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:  # pragma: no cover  (torch and lightning load in run(), after the config checks)
    import lightning as L
    from torch import nn

    from burnlike.record.format.recorder import Recorder
    from burnlike.train.metric.base import Metric
    from burnlike.train.metric.store import EpochEntry, MetricStore, Split


from burnlike.app.console import CONSOLE, narrow_console
from burnlike.record.format.location import AnyPath, as_path

log = logging.getLogger("burnlike.app")

METRICS = {"Accuracy": "AccuracyMetric", "Loss": "LossMetric", "Learning Rate": "LearningRateMetric",
           "Iteration Speed": "IterationSpeedMetric"}
VALID_METRICS = ("Accuracy", "Loss")  # the ones a validation pass can compute
# Lightning's messages name its argument; the app names the override that set it
TRAINER_KEYS = ("precision", "strategy", "devices", "num_nodes", "accelerator")
STRATEGIES = ("single", "multi", "multi_sharded", "ddp")  # learner.strategy: Burn's ExecutionStrategy
MATMUL_PRECISIONS = ("highest", "high", "medium")  # trainer.matmul_precision: torch.set_float32_matmul_precision


class AppConfigError(ValueError):
    """A config value the schema's types allow but training can't use (names the key)."""


def validate(cfg: DictConfig) -> None:
    """Reject values the schema's types allow but training can't use, before anything heavy starts
    (so the message names the override, not a Lightning internal)."""
    patience = cfg.learner.early_stopping_patience
    checks = [
        ("learner.early_stopping_patience", patience, lambda v: v is None or v >= 1, "null or an integer >= 1"),
        ("trainer.num_nodes", cfg.trainer.num_nodes, lambda v: v >= 1, "an integer >= 1"),
        ("learner.num_epochs", cfg.learner.num_epochs, lambda v: v >= 1, "an integer >= 1"),
        ("learner.grads_accumulation", cfg.learner.grads_accumulation, lambda v: v >= 1, "an integer >= 1"),
        ("learner.num_iterations", cfg.learner.get("num_iterations"), lambda v: v is None or v >= 1,
         "null or an integer >= 1"),
        ("learner.valid_every", cfg.learner.get("valid_every"), lambda v: v is None or v >= 1, "null or an integer >= 1"),
        ("data.batch_size", cfg.data.batch_size, lambda v: v >= 1, "an integer >= 1"),
        ("data.num_workers", cfg.data.num_workers, lambda v: v >= 0, "an integer >= 0"),
        ("optimizer.lr", cfg.optimizer.get("lr", 1.0), lambda v: v > 0, "a number > 0"),
        ("learner.recorder", cfg.learner.recorder, lambda v: v in recorder_names(), f"one of {recorder_names()}"),
        ("learner.strategy", cfg.learner.get("strategy"), lambda v: v is None or v in STRATEGIES,
         f"null or one of {list(STRATEGIES)}"),
        ("trainer.matmul_precision", cfg.trainer.matmul_precision, lambda v: v is None or v in MATMUL_PRECISIONS,
         f"null or one of {list(MATMUL_PRECISIONS)}"),
        ("learner.dist_timeout", cfg.learner.dist_timeout, lambda v: v is None or v > 0, "null or seconds > 0"),
        ("learner.lock_timeout", cfg.learner.lock_timeout, lambda v: v >= 0, "seconds >= 0 (0: no lock)"),
    ]
    for key, value, ok, expected in checks:
        if not ok(value):  # type: ignore[no-untyped-call]
            raise AppConfigError(f"{key}={value!r} is invalid: expected {expected}")
    for name in cfg.learner.metrics:
        if name not in METRICS:
            raise AppConfigError(f"learner.metrics: unknown metric {name!r} (expected some of {sorted(METRICS)})")
    from burnlike.app.loggers import LoggerConfigError, check

    try:
        check(cfg)
    except LoggerConfigError as e:
        raise AppConfigError(str(e)) from None
    if cfg.learner.get("strategy") is not None and str(cfg.trainer.strategy) != "auto":
        raise AppConfigError(f"learner.strategy={cfg.learner.strategy} and trainer.strategy={cfg.trainer.strategy} "
                             "both choose the Lightning strategy: set one (trainer.strategy=auto with learner.strategy)")
    every, total = cfg.learner.get("valid_every"), cfg.learner.get("num_iterations")
    if every is not None and total is not None and total % every:
        raise AppConfigError(f"learner.num_iterations={total} is not a multiple of learner.valid_every={every}: "
                             f"an epoch is valid_every iterations (e.g. learner.num_iterations={total // every * every or every})")
    if (every is not None or total is not None) and cfg.trainer.limit_train_batches is not None:
        raise AppConfigError("learner.num_iterations/learner.valid_every and trainer.limit_train_batches="
                             f"{cfg.trainer.limit_train_batches} both set an epoch's batches: set one")
    if cfg.learner.get("async_save") and not cfg.learner.checkpointing:
        raise AppConfigError("learner.async_save=true needs learner.checkpointing=true (nothing else is saved)")
    if cfg.learner.checkpoint is not None and not _resume_point(cfg.learner.checkpoint):
        raise AppConfigError(f"learner.checkpoint={cfg.learner.checkpoint} is invalid: expected an epoch >= 1 or 'last'")
    split, _, name = str(cfg.optimized_metric).partition("/")
    logged = {"train": list(cfg.learner.metrics), "valid": [m for m in cfg.learner.metrics if m in VALID_METRICS]}
    if name not in logged.get(split, []):
        options = [f"{s}/{m}" for s, ms in logged.items() for m in ms]
        raise AppConfigError(f"optimized_metric={cfg.optimized_metric!r} is not logged by this run: expected one of "
                             f"{options} (learner.metrics decides what is logged)")


def metric_class(name: str) -> type[Metric]:
    """The metric class of a `learner.metrics` name (loads torch: call after `validate`)."""
    from burnlike.train import metric

    cls: type[Metric] = getattr(metric, METRICS[name])
    return cls


def sweep_direction(optimized_metric: str) -> str:
    """The sweeper's direction for `optimized_metric` (resolver `burnlike.sweep_direction`): the
    metric's own `higher_is_better`, so a search never maximizes a loss."""
    split, _, name = optimized_metric.partition("/")
    higher = metric_class(name).higher_is_better if name in METRICS else None
    if higher is None:
        raise AppConfigError(f"optimized_metric={optimized_metric!r}: not a metric with a direction "
                             f"(expected <split>/<name> with a name among {sorted(METRICS)} that has one)")
    return "maximize" if higher else "minimize"


def check_devices(cfg: DictConfig) -> None:
    """What this machine can run (separate from `validate`, which any machine can check)."""
    if str(cfg.trainer.accelerator) in ("gpu", "cuda"):
        import torch

        if not torch.cuda.is_available():
            raise AppConfigError(f"trainer.accelerator={cfg.trainer.accelerator} but torch sees no CUDA device "
                                 "(use trainer=cpu, or trainer=ddp with accelerator=cpu)")


def recorder_names() -> list[str]:
    """`learner.recorder`'s values: the record registry's short names (imported here: it loads torch)."""
    from burnlike.record.format.registry import SHORT_NAMES

    return sorted(SHORT_NAMES)


def recorder_from(name: str) -> Recorder:
    """The recorder a `learner.recorder` value names (`compact`, `bin_gz`, …)."""
    from burnlike.record.format.registry import by_name

    return by_name(name)


def build_model(cfg: DictConfig) -> nn.Module:
    """`model=` option: a burnlike `@config` with `init(device)`, or any `_target_` (a model or a config).

    Built on the CPU: Lightning moves it to each rank's own device (building on "cuda" would put
    every DDP rank's copy, and a CUDA context, on GPU 0 first)."""
    if "_target_" in cfg.model:
        from hydra.utils import instantiate

        obj = instantiate(cfg.model)
    else:
        obj = OmegaConf.to_object(cfg.model)
    model: nn.Module = obj.init("cpu") if hasattr(obj, "init") and callable(obj.init) else obj
    return model


def execution(cfg: DictConfig) -> Any:
    """`learner.strategy` as Burn's `ExecutionStrategy` on the trainer's accelerator and devices."""
    from burnlike.train.strategy import DistributedConfig, ExecutionStrategy, MultiDeviceOptim

    t, kind = cfg.trainer, str(cfg.learner.strategy)
    devices = _devices(t.devices)
    if isinstance(devices, bool) or not isinstance(devices, (int, list)) or devices in (0, -1):
        raise AppConfigError(f"learner.strategy={kind} needs trainer.devices as a count or a list of indices, "
                             f"got {devices!r}")
    indices = list(range(devices)) if isinstance(devices, int) else [int(d) for d in devices]
    accelerator = str(t.accelerator)
    if accelerator == "auto":  # the default: Burn's strategies name their devices, so pick them here
        import torch

        accelerator = "gpu" if torch.cuda.is_available() else "cpu"
    if accelerator not in ("cpu", "gpu", "cuda"):
        raise AppConfigError(f"learner.strategy={kind} needs trainer.accelerator=cpu or gpu, got {accelerator}")
    names = ["cpu"] * len(indices) if accelerator == "cpu" else [f"cuda:{i}" for i in indices]
    if kind == "single":
        if len(names) != 1:
            raise AppConfigError(f"learner.strategy=single needs one device, got trainer.devices={devices!r}")
        return ExecutionStrategy.single(names[0])
    if kind == "ddp":
        return ExecutionStrategy.ddp(names, DistributedConfig(num_nodes=int(t.num_nodes)))
    if kind == "multi_sharded":  # several nodes shard the model as one group, as DDP's ranks do
        sharded = ExecutionStrategy.multi(names, MultiDeviceOptim.OPTIM_SHARDED)
        return dataclasses.replace(sharded, num_nodes=int(t.num_nodes)) if int(t.num_nodes) > 1 else sharded
    return ExecutionStrategy.multi(names, MultiDeviceOptim.OPTIM_MAIN_DEVICE)


def trainer_strategy(cfg: DictConfig, strategy: Any = None) -> Any:
    """Under `-m`, Lightning's script launcher (`ddp`, and `auto` with several devices) would make
    ranks 1..N-1 re-launch the sweep: point them at this job, or, where that can't be done
    (`patch_for_multirun` says why), run an explicit `ddp` job with `ddp_spawn` instead."""
    strategy = str(cfg.trainer.strategy) if strategy is None else strategy
    if not isinstance(strategy, str):
        return strategy
    if _is_multirun():
        from burnlike.app.ddp import patch_for_multirun

        why = patch_for_multirun()
        if why is not None and (strategy == "ddp" or strategy.startswith("ddp_find_unused")):
            log.warning("multirun: %s; using ddp_spawn for this job", why)
            return strategy.replace("ddp", "ddp_spawn", 1)
    return strategy


def _is_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def output_dir() -> Path:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir)


def run(cfg: DictConfig, artifact_dir: str | Path | None = None) -> float:
    """Train as configured; return `cfg.optimized_metric`'s best epoch value (for sweepers)."""
    validate(cfg)
    check_devices(cfg)
    local = Path(artifact_dir) if artifact_dir is not None else output_dir()  # Hydra's run dir (or the caller's)
    artifact = as_path(cfg.artifacts) if cfg.get("artifacts") else local
    artifact.mkdir(parents=True, exist_ok=True)
    with run_dir_lock(artifact, cfg.learner.lock_timeout):
        return train(cfg, local, artifact)


def run_dir_lock(artifact: AnyPath, timeout: float) -> contextlib.AbstractContextManager[object]:
    """The job's hold on its artifact dir (`burnlike.app.lock`): taken by the job's rank zero, the
    other ranks of the job share the dir; none when `learner.lock_timeout` is 0."""
    from burnlike.app.lock import RunDirLock

    return RunDirLock(artifact, timeout) if timeout > 0 and is_rank_zero() else contextlib.nullcontext()


def train(cfg: DictConfig, local: Path, artifact: AnyPath) -> float:
    """`run` once the config is checked and the artifact dir is this job's."""
    import burnlike
    from burnlike.app.data import DataConfigError, build_loaders

    if is_rank_zero():  # Burn's `config.save(...)` on the composed AppConfig (a burnlike @config)
        getattr(OmegaConf.to_object(cfg), "save")(artifact / "config.json")  # noqa: B009 - an @config method
    burnlike.seed(cfg.seed)
    t = cfg.trainer
    if t.matmul_precision is not None:  # the process's setting, as Lightning's tip asks
        import torch

        torch.set_float32_matmul_precision(t.matmul_precision)

    try:  # the data= option picks dataset and batcher, and checks the model fits them
        train_loader, valid_loader = build_loaders(cfg)
    except DataConfigError as e:
        raise AppConfigError(str(e)) from e

    from burnlike.train import LearnerBuilder, MetricEarlyStoppingStrategy, StoppingCondition
    from burnlike.train.checkpoint import FileCheckpointer
    from burnlike.train.metric import LossMetric

    narrow_console()

    builder = LearnerBuilder(artifact)
    for name in cfg.learner.metrics:
        metric_cls = metric_class(name)
        builder.metric_train_numeric(metric_cls())
        if name in VALID_METRICS:
            builder.metric_valid_numeric(metric_cls())
    recorder = recorder_from(cfg.learner.recorder)
    if cfg.learner.checkpointing:
        builder.with_file_checkpointer(recorder).async_checkpoints(cfg.learner.async_save)
    if cfg.learner.early_stopping_patience:
        builder.early_stopping(MetricEarlyStoppingStrategy(
            LossMetric(), condition=StoppingCondition.no_improvement_since(cfg.learner.early_stopping_patience)))
    point = _resume_point(cfg.learner.checkpoint)
    if point is not None:  # validate() has rejected any other value
        builder.checkpoint(point)
    if cfg.learner.summary:
        builder.summary()
    if cfg.learner.cuda_graph:
        builder.cuda_graph()
    if cfg.learner.get("num_iterations") is not None:
        builder.num_iterations(cfg.learner.num_iterations)
    if cfg.learner.get("valid_every") is not None:
        builder.valid_every(cfg.learner.valid_every)
    extra = {k: v for k, v in (("limit_train_batches", t.limit_train_batches),
                               ("limit_val_batches", t.limit_val_batches)) if v is not None}
    placement = {"accelerator": t.accelerator, "devices": _devices(t.devices), "num_nodes": t.num_nodes,
                 "strategy": trainer_strategy(cfg)}
    if cfg.learner.get("strategy") is not None:  # Burn's ExecutionStrategy, the same translation as the API
        placement = {"num_nodes": t.num_nodes, **execution(cfg).trainer_kwargs()}
        placement["strategy"] = trainer_strategy(cfg, placement.get("strategy", "auto"))
    builder = (builder.num_epochs(cfg.learner.num_epochs).grads_accumulation(cfg.learner.grads_accumulation)
               .progress_bar(cfg.learner.progress_bar)
               .trainer_kwargs(**placement, precision=t.precision, fast_dev_run=t.fast_dev_run,
                               **extra, **dict(OmegaConf.to_container(t.extra, resolve=True))))  # type: ignore[arg-type]
    from burnlike.app.loggers import build_loggers, hyperparams

    builder.with_logger(*build_loggers(cfg, artifact, local), every_n_steps=cfg.logger.every_n_steps,
                        hyperparams=hyperparams(artifact))
    optimizer = OmegaConf.to_object(cfg.optimizer)
    model = build_model(cfg)
    lr = scheduled_lr(cfg, train_loader)
    try:
        learner = builder.build(model, getattr(optimizer, "init")(), lr)  # noqa: B009
    except (ValueError, TypeError) as e:  # Lightning's Trainer rejects an argument (MisconfigurationException too)
        raise AppConfigError(trainer_error(cfg, e)) from e
    if cfg.learner.dist_timeout is not None:
        from burnlike.train.strategy import set_process_group_timeout

        set_process_group_timeout(learner.trainer.strategy, float(cfg.learner.dist_timeout))
    from burnlike.train.learner import CheckpointMoveError

    try:
        learner.resume_path(warn=False)  # fit warns (once) about what it skips
    except CheckpointMoveError as e:
        raise AppConfigError(f"learner.checkpoint={cfg.learner.checkpoint}: {e}") from e
    except (FileNotFoundError, ValueError) as e:
        raise AppConfigError(resume_error(cfg, artifact, e)) from e
    tracker = MetricTracker(str(cfg.optimized_metric), artifact / "result.json", learner.module.store, learner.trainer)
    checkpointer = next((c for c in learner.trainer.callbacks if isinstance(c, FileCheckpointer)), None)  # type: ignore[attr-defined]
    if checkpointer is not None:  # an epoch is listed once its checkpoint is saved (a failed save: never)
        checkpointer.epoch_saved.append(tracker.saved)
    else:
        learner.module.store.add_listener(tracker)
    with _distributed_job():
        result = learner.fit(train_loader, valid_loader)
    if result.trainer is not None and not result.trainer.is_global_zero:
        return tracker.best()
    path = result.model.save_file(artifact / "model", recorder, durable=True)  # type: ignore[operator]  # a burnlike Module
    log.info("saved the trained model to %s", path, extra=CONSOLE)
    tracker.write()
    from burnlike.app.data import generated_sample

    sample = generated_sample(cfg, result.model)
    if sample is not None:
        log.info("a sample from the trained model (data.sample_length=%d):\n%s", cfg.data.sample_length, sample,
                 extra=CONSOLE)
    return tracker.best()


def run_iterations(cfg: DictConfig, train_loader: Any) -> int:
    """The run's training iterations (batches), what a scheduler without its own length spans."""
    learner, limit = cfg.learner, cfg.trainer.limit_train_batches
    if learner.get("num_iterations") is not None:
        return int(learner.num_iterations)
    per_epoch = learner.get("valid_every") or len(train_loader)
    if limit is not None and not learner.get("valid_every"):  # Lightning's rule: a count, or a fraction
        per_epoch = min(per_epoch, int(limit)) if limit > 1 else int(per_epoch * limit)
    return int(learner.num_epochs) * max(int(per_epoch), 1)


def scheduled_lr(cfg: DictConfig, train_loader: Any) -> Any:
    """`optimizer.lr`, or the `scheduler=` option's LR scheduler over the run's iterations."""
    from burnlike.app.scheduler import learning_rate

    scheduler = OmegaConf.to_object(cfg.scheduler) if cfg.get("scheduler") is not None else None
    try:
        return learning_rate(scheduler, float(cfg.optimizer.lr), run_iterations(cfg, train_loader))
    except (ValueError, TypeError) as e:
        raise AppConfigError(f"scheduler: {e} (optimizer.lr={cfg.optimizer.lr}, "
                             f"scheduler={OmegaConf.to_container(cfg.scheduler)})") from e


def trainer_error(cfg: DictConfig, error: Exception) -> str:
    text = " ".join(str(error).split())
    keys = [f"trainer.{k}" for k in TRAINER_KEYS if k in text.lower()] or [f"trainer.{k}" for k in TRAINER_KEYS]
    settings = ", ".join(f"{k}={OmegaConf.select(cfg, k)!r}" for k in keys)
    return f"{' / '.join(keys)}: Lightning's Trainer rejected {settings}: {text}"


def _resume_point(value: object) -> int | str | None:
    """`learner.checkpoint`: an epoch (>= 1) or "last"; None when it is neither."""
    text = str(value).strip()
    if text == "last":
        return text
    return int(text) if text.isdigit() and int(text) >= 1 else None


def resume_error(cfg: DictConfig, artifact: AnyPath, error: Exception) -> str:
    if not cfg.learner.checkpointing:
        return f"learner.checkpoint={cfg.learner.checkpoint} needs learner.checkpointing=true (nothing to resume from)"
    folder = artifact / "checkpoint"
    names = ", ".join(sorted(p.name for p in folder.glob("trainer-*"))) if folder.is_dir() else ""
    names = names or "none"
    return (f"learner.checkpoint={cfg.learner.checkpoint}: {error}. Checkpoints in {artifact}: {names}. "
            "Resume inside the run's own dir: hydra.run.dir=<that run dir>")


class MetricTracker:
    """Writes `result.json` from the run's metric store: the optimized metric's epoch values (as every
    rank sees them after the cross-rank reduction), its direction (the metric's own) and its best.

    The Burn-layout `.log` files hold rank 0's own steps only, so under DDP they are not what a
    sweeper should optimize. Rank 0 rewrites `result.json` after each epoch, so a killed run still
    knows its epochs; a resumed run's store starts with the checkpoint's epochs."""

    def __init__(self, key: str, path: AnyPath, store: MetricStore, trainer: L.Trainer | None = None) -> None:
        from burnlike.train.metric.store import Split

        self.key, self.path, self.store, self.trainer = key, path, store, trainer
        split, _, self.name = key.partition("/")
        self.split = Split(split)
        direction = store.direction(self.name)
        if direction is None:
            raise AppConfigError(f"optimized_metric={key!r}: the metric has no direction (higher_is_better=None), "
                                 "so no epoch is best; optimize a metric such as valid/Accuracy or valid/Loss")
        self.direction = direction

    def __call__(self, split: Split, epoch: int, entries: Mapping[str, EpochEntry]) -> None:
        if split is self.split and self.name in entries:
            self.write()

    def saved(self, epoch: int) -> None:
        """The checkpoint of `epoch` is saved: the result may list it."""
        self.write()

    def best_epoch(self) -> int | None:
        return self.store.find_epoch(self.name, self.split, self.direction)

    def best(self) -> float:
        epoch = self.best_epoch()
        return float("nan") if epoch is None else self.store.epochs(self.split, self.name)[epoch]

    def write(self) -> None:
        if self.trainer is not None and not self.trainer.is_global_zero:
            return
        data = {"optimized_metric": self.key, "mode": self.direction.value, "value": self.best(),
                "best_epoch": self.best_epoch(),
                "epochs": {str(e): v for e, v in self.store.epochs(self.split, self.name).items()}}
        from burnlike.record.format.files import atomic_write

        atomic_write(self.path, (json.dumps(data, indent=2) + "\n").encode())


@contextlib.contextmanager
def _distributed_job() -> Iterator[None]:
    """A job ends its process group itself, as PyTorch advises for DDP scripts: left to interpreter
    shutdown, gloo's threads were once torn down mid-way (both ranks of a finished 2-process CPU fit
    aborted, "terminate called without an active exception"). After a fit every rank reaches the
    barrier; after an error there is none, as the other ranks may be gone. In a multirun it also
    leaves no distributed state for the next job in this process: Lightning sets
    LOCAL_RANK/MASTER_PORT/WORLD_SIZE… in os.environ."""
    from burnlike.train.process_group import end_process_group

    env = dict(os.environ) if _is_multirun() else None
    try:
        yield
        end_process_group(barrier=True)
    finally:
        end_process_group(barrier=False)  # no-op when the fit ended it
        if env is not None:
            os.environ.clear()
            os.environ.update(env)


def is_rank_zero() -> bool:
    """Rank 0 of a job, before Lightning knows: launched children (LOCAL_RANK), torchrun (RANK) and
    srun tasks (SLURM_PROCID) say so in their environment."""
    return all(os.environ.get(k, "0") == "0" for k in ("LOCAL_RANK", "NODE_RANK", "RANK", "SLURM_PROCID"))


def _devices(value: Any) -> Any:
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
