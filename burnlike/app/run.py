"""Build a training run from a composed Hydra config, with the same public calls a user writes."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("burnlike.app")

RECORDERS = {
    "compact": ("NamedMpkFileRecorder", "HalfPrecisionSettings"),
    "default": ("NamedMpkFileRecorder", "FullPrecisionSettings"),
    "mpk_gz": ("NamedMpkGzFileRecorder", "HalfPrecisionSettings"),
    "json": ("PrettyJsonFileRecorder", "FullPrecisionSettings"),
    "json_gz": ("JsonGzFileRecorder", "FullPrecisionSettings"),
    "bin": ("BinFileRecorder", "FullPrecisionSettings"),
    "bin_gz": ("BinGzFileRecorder", "HalfPrecisionSettings"),
}
METRICS = {"Accuracy": "AccuracyMetric", "Loss": "LossMetric", "Learning Rate": "LearningRateMetric",
           "Iteration Speed": "IterationSpeedMetric"}


class AppConfigError(ValueError):
    """A config value the schema's types allow but training can't use (names the key)."""


def validate(cfg: DictConfig) -> None:
    checks = [
        ("learner.num_epochs", cfg.learner.num_epochs, lambda v: v >= 1, "an integer >= 1"),
        ("learner.grads_accumulation", cfg.learner.grads_accumulation, lambda v: v >= 1, "an integer >= 1"),
        ("data.batch_size", cfg.data.batch_size, lambda v: v >= 1, "an integer >= 1"),
        ("data.num_workers", cfg.data.num_workers, lambda v: v >= 0, "an integer >= 0"),
        ("optimizer.lr", cfg.optimizer.get("lr", 1.0), lambda v: v > 0, "a number > 0"),
        ("learner.recorder", cfg.learner.recorder, lambda v: v in RECORDERS, f"one of {sorted(RECORDERS)}"),
    ]
    for key, value, ok, expected in checks:
        if not ok(value):
            raise AppConfigError(f"{key}={value!r} is invalid: expected {expected}")
    for name in cfg.learner.metrics:
        if name not in METRICS:
            raise AppConfigError(f"learner.metrics: unknown metric {name!r} (expected some of {sorted(METRICS)})")
    if cfg.learner.checkpoint is not None and cfg.learner.checkpoint < 1:
        raise AppConfigError(f"learner.checkpoint={cfg.learner.checkpoint} is invalid: expected an epoch >= 1")


def recorder_from(name: str) -> Any:
    import burnlike.record as rec

    cls, settings = RECORDERS[name]
    return getattr(rec, cls)(getattr(rec, settings))


def build_model(cfg: DictConfig, device: Any) -> Any:
    """`model=` option: a burnlike `@config` with `init(device)`, or any `_target_` (a model or a config)."""
    if "_target_" in cfg.model:
        from hydra.utils import instantiate

        obj = instantiate(cfg.model)
    else:
        obj = OmegaConf.to_object(cfg.model)
    return obj.init(device) if hasattr(obj, "init") and callable(obj.init) else obj


def trainer_strategy(cfg: DictConfig) -> str:
    """Under `-m`, Lightning's `ddp` children would re-launch the sweep: point them at this job."""
    strategy = str(cfg.trainer.strategy)
    if strategy.startswith("ddp") and not strategy.startswith("ddp_spawn") and _is_multirun():
        from burnlike.app.ddp import patch_for_multirun

        patch_for_multirun()
    return strategy


def _is_multirun() -> bool:
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
    except Exception:  # pragma: no cover - outside Hydra
        return False


def output_dir() -> Path:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir)


def run(cfg: DictConfig, artifact_dir: str | Path | None = None) -> float:
    """Train as configured; return `cfg.optimized_metric`'s best epoch value (for sweepers)."""
    validate(cfg)
    import burnlike
    from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
    from burnlike.train import LearnerBuilder, MetricEarlyStoppingStrategy, StoppingCondition
    from burnlike.train import metric as metrics

    artifact = Path(artifact_dir) if artifact_dir is not None else output_dir()
    artifact.mkdir(parents=True, exist_ok=True)
    if _is_rank_zero():
        (artifact / "config.json").write_text(json.dumps(OmegaConf.to_container(cfg, resolve=True), indent=2) + "\n")
    burnlike.seed(cfg.seed)
    t = cfg.trainer
    device = "cuda" if t.accelerator in ("gpu", "cuda") else "cpu"

    def loader(dataset: MnistDataset) -> Any:
        return (DataLoaderBuilder(MnistBatcher()).batch_size(cfg.data.batch_size).shuffle(cfg.data.shuffle_seed)
                .num_workers(cfg.data.num_workers).build(dataset))

    train_loader = loader(MnistDataset.train(cfg.data.root))
    valid_loader = loader(MnistDataset.test(cfg.data.root))

    builder = LearnerBuilder(artifact)
    for name in cfg.learner.metrics:
        metric_cls = getattr(metrics, METRICS[name])
        builder.metric_train_numeric(metric_cls())
        if name in ("Accuracy", "Loss"):
            builder.metric_valid_numeric(metric_cls())
    recorder = recorder_from(cfg.learner.recorder)
    if cfg.learner.checkpointing:
        builder.with_file_checkpointer(recorder)
    if cfg.learner.early_stopping_patience:
        builder.early_stopping(MetricEarlyStoppingStrategy(
            metrics.LossMetric(), condition=StoppingCondition.no_improvement_since(cfg.learner.early_stopping_patience)))
    if cfg.learner.checkpoint is not None:
        builder.checkpoint(cfg.learner.checkpoint)
    if cfg.learner.summary:
        builder.summary()
    extra = {k: v for k, v in (("limit_train_batches", t.limit_train_batches),
                               ("limit_val_batches", t.limit_val_batches)) if v is not None}
    builder = (builder.num_epochs(cfg.learner.num_epochs).grads_accumulation(cfg.learner.grads_accumulation)
               .progress_bar(cfg.learner.progress_bar)
               .trainer_kwargs(accelerator=t.accelerator, devices=_devices(t.devices), strategy=trainer_strategy(cfg),
                               precision=t.precision, num_nodes=t.num_nodes, fast_dev_run=t.fast_dev_run,
                               **extra, **OmegaConf.to_container(t.extra, resolve=True)))
    optimizer = OmegaConf.to_object(cfg.optimizer)
    learner = builder.build(build_model(cfg, device), optimizer.init(), float(cfg.optimizer.lr))
    with _isolated_job():
        result = learner.fit(train_loader, valid_loader)
    if result.trainer is not None and not result.trainer.is_global_zero:
        return float("nan")
    path = result.model.save_file(artifact / "model", recorder)
    log.info("saved the trained model to %s", path)
    value = best_value(artifact, str(cfg.optimized_metric), result)
    # what the sweeper receives, also on disk for scripts that drive `-m` runs
    (artifact / "result.json").write_text(json.dumps({"optimized_metric": str(cfg.optimized_metric), "value": value}))
    return value


@contextlib.contextmanager
def _isolated_job() -> Iterator[None]:
    """In a multirun, leave no distributed state behind for the next job in this process: Lightning
    sets LOCAL_RANK/MASTER_PORT/WORLD_SIZE… in os.environ and keeps the process group open."""
    if not _is_multirun():
        yield
        return
    env = dict(os.environ)
    try:
        yield
    finally:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
        os.environ.clear()
        os.environ.update(env)


def _is_rank_zero() -> bool:
    return all(os.environ.get(k, "0") == "0" for k in ("LOCAL_RANK", "NODE_RANK", "RANK"))


def _devices(value: Any) -> Any:
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value


def best_value(artifact: Path, key: str, result: Any) -> float:
    from burnlike.train.logger import read_epochs

    split, _, name = key.partition("/")
    values = read_epochs(artifact, split, name)
    if not values:
        logged = result.trainer.callback_metrics.get(key) if result.trainer is not None else None
        return float(logged) if logged is not None else float("nan")
    lower_is_better = name in ("Loss",)
    return min(values.values()) if lower_is_better else max(values.values())


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)
