"""The `logger` group: Lightning loggers writing into the run dir, and what they get as hyperparameters.

Each run's trackers live in its own run dir (csv/, tensorboard/, mlruns/, wandb/), so resuming with
`hydra.run.dir=<run dir>` finds the run the checkpoint names and appends to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from burnlike.record.format.location import AnyPath

if TYPE_CHECKING:  # pragma: no cover
    from lightning.pytorch.loggers import Logger

KINDS = ("csv", "tensorboard", "mlflow", "wandb")
PACKAGES = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb"}


class LoggerConfigError(ValueError):
    """A `logger.*` value that can't build a logger (names the key)."""


def check(cfg: DictConfig) -> None:
    """Unknown kinds and missing packages, before anything heavy starts."""
    import importlib.util

    kinds = list(cfg.logger.kinds)
    for kind in kinds:
        if kind not in KINDS:
            raise LoggerConfigError(f"logger.kinds: unknown logger {kind!r} (expected some of {list(KINDS)})")
        package = PACKAGES.get(kind)
        if package and importlib.util.find_spec(package) is None:
            raise LoggerConfigError(f"logger={kind} needs the {package} package: pip install 'burnlike[loggers]'")
    if len(set(kinds)) != len(kinds):
        raise LoggerConfigError(f"logger.kinds: {kinds} names a logger twice")
    if cfg.logger.every_n_steps < 0:
        raise LoggerConfigError(f"logger.every_n_steps={cfg.logger.every_n_steps} is invalid: expected an integer >= 0")


def build_loggers(cfg: DictConfig, run_dir: AnyPath, local_dir: Path | None = None) -> list[Logger]:
    """One Lightning logger per `logger.kinds` entry: CSV and TensorBoard write under `run_dir` (a
    local folder or any fsspec URL), MLflow's file store and W&B's offline runs under `local_dir`
    (they write local files only; default `run_dir`)."""
    local = local_dir if local_dir is not None else run_dir
    if not isinstance(local, Path):
        local = Path(".")
    c = cfg.logger
    builders: dict[str, Callable[[], Logger]] = {
        "csv": lambda: _csv(run_dir),
        "tensorboard": lambda: _tensorboard(run_dir),
        "mlflow": lambda: _mlflow(local, str(c.name), c.mlflow_tracking_uri),
        "wandb": lambda: _wandb(local, str(c.name), c.wandb_offline),
    }
    return [builders[kind]() for kind in c.kinds]


def _csv(run_dir: AnyPath) -> Logger:
    from lightning.pytorch.loggers import CSVLogger

    return CSVLogger(str(run_dir), name="csv")  # a URL: Lightning writes through fsspec


def _tensorboard(run_dir: AnyPath) -> Logger:
    from lightning.pytorch.loggers import TensorBoardLogger

    return TensorBoardLogger(str(run_dir), name="tensorboard", default_hp_metric=False)


def _mlflow(run_dir: Path, name: str, uri: str | None) -> Logger:
    from lightning.pytorch.loggers import MLFlowLogger

    if uri is None:  # MLflow 3 keeps the file store only on request; a local run dir is what it is for here
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        uri = (run_dir / "mlruns").resolve().as_uri()
    return MLFlowLogger(experiment_name=name, tracking_uri=uri)


def _wandb(run_dir: Path, name: str, offline: bool | None) -> Logger:
    from lightning.pytorch.loggers import WandbLogger

    from burnlike._lightning import wandb_init

    if offline is None:
        offline = not os.environ.get("WANDB_API_KEY")
    logger = WandbLogger(project=name, save_dir=str(run_dir), offline=offline)
    if wandb_init(logger).get("anonymous") is None:  # Lightning passes None, which wandb warns is moot
        wandb_init(logger).pop("anonymous", None)
    return logger


def hyperparams(run_dir: AnyPath) -> dict[str, Any]:
    """What each logger gets: config.json (Burn's saved config: the resolved config) and the commit
    of the code that ran (null outside a git checkout)."""
    path = run_dir / "config.json"
    config = json.loads(path.read_text()) if path.exists() else {}
    return {"config": config, "git_commit": git_commit()}


GIT_TIMEOUT_S = 10.0  # a git that hangs (a network filesystem, a lock) must not hold up the run


def git_commit(cwd: Path | None = None) -> str | None:
    """HEAD of the git checkout that holds `cwd`, by default the code that trains: the running
    script's folder (`train.py`, or another repo's own script), else the current directory. A
    `-dirty` suffix when it has local changes (whatever bytes their names hold); None outside a
    checkout, without git, or when git takes longer than `GIT_TIMEOUT_S`."""
    where = cwd if cwd is not None else script_dir()

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=GIT_TIMEOUT_S)  # file names need not be UTF-8

    try:
        sha = git("rev-parse", "HEAD")
        if sha.returncode != 0:
            return None
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def script_dir() -> Path | None:
    """The folder of the script Python runs (`__main__`), None in an interactive session."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return Path(path).resolve().parent if path else None
