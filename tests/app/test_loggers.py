"""`burnlike.app.loggers`: the experiment loggers the app builds (`logger.kinds`: csv, tensorboard,
mlflow, wandb). Each writes under the run dir unless told otherwise, gets the run's name, the
config and the git commit as hyperparameters; `check` refuses a config the loggers can't run
before training; a resumed run continues the same MLflow / W&B run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from burnlike.app import loggers
from burnlike.app.loggers import (
    LoggerConfigError,
    _wandb,
    build_loggers,
    check,
    git_commit,
    hyperparams,
    script_dir,
)
from burnlike.app.run import run
from tests.app.helpers import SMALL
from tests.helpers.paths import REPO
from tests.helpers.wandb_records import wandb_records


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


# --- csv and tensorboard --------------------------------------------------------------------------
def test_csv_logger_writes_under_the_run_dir_and_hyperparams_need_no_config_yet(conf, tmp_path):
    (csv,) = build_loggers(conf("logger.kinds=[csv]"), tmp_path)
    assert csv.name == "csv" and csv.root_dir == str(tmp_path / "csv")
    assert hyperparams(tmp_path / "no-run-yet")["config"] == {}


def test_tensorboard_logger_writes_under_the_run_dir(mlp_conf, tmp_path):
    (logger,) = build_loggers(mlp_conf("logger=tensorboard"), tmp_path)
    assert type(logger).__name__ == "TensorBoardLogger"
    assert Path(logger.save_dir) == tmp_path and logger.name == "tensorboard"
    assert Path(logger.log_dir) == tmp_path / "tensorboard" / "version_0"
    logger.log_metrics({"valid/Loss": 0.5}, step=1)
    logger.log_hyperparams({"lr": 0.1})
    logger.finalize("success")
    files = list((tmp_path / "tensorboard" / "version_0").glob("events.out.tfevents.*"))
    assert files and files[0].stat().st_size > 0
    assert logger._default_hp_metric is False  # no hp_metric placeholder next to Burn's metrics


# --- mlflow ---------------------------------------------------------------------------------------
def test_mlflow_logs_under_the_runs_name_into_the_run_dir(conf, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (logger,) = build_loggers(conf(*SMALL, "logger=mlflow", "logger.name=my-sweep"), tmp_path)
    assert logger._experiment_name == "my-sweep"
    assert logger._tracking_uri == (tmp_path / "mlruns").resolve().as_uri()


def test_mlflow_gets_the_name_and_tracking_uri_and_a_file_store_only_in_the_run_dir(conf, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    uri = "http://127.0.0.1:9/mlflow"  # a tracking server (not contacted before the first log)
    (mlflow,) = build_loggers(conf("logger.kinds=[mlflow]", "logger.name=exp", f"logger.mlflow_tracking_uri={uri}"),
                              tmp_path)
    assert mlflow._tracking_uri == uri and "MLFLOW_ALLOW_FILE_STORE" not in os.environ
    build_loggers(conf("logger.kinds=[mlflow]"), tmp_path)  # the run dir's own file store: allowed explicitly
    assert os.environ["MLFLOW_ALLOW_FILE_STORE"] == "true"


# --- wandb ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "offline"), [(None, True), ("0123456789abcdef0123456789abcdef01234567", False)])
def test_wandb_goes_offline_without_an_api_key_into_the_run_dir(tmp_path, monkeypatch, key, offline):
    pytest.importorskip("wandb")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    if key:
        monkeypatch.setenv("WANDB_API_KEY", key)
    logger = _wandb(tmp_path, "my-project", None)
    assert logger._offline is offline
    assert logger.save_dir == str(tmp_path)
    assert logger.name == "my-project"
    assert "anonymous" not in logger._wandb_init  # Lightning's None, which wandb would warn about


def test_wandb_gets_the_project_and_offline_as_asked(conf, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    (wandb,) = build_loggers(conf("logger.kinds=[wandb]", "logger.name=proj", "logger.wandb_offline=true"), tmp_path)
    assert wandb._wandb_init["project"] == "proj" and wandb.name == "proj" and wandb._offline is True
    assert "anonymous" not in wandb._wandb_init
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    (online,) = build_loggers(conf("logger.kinds=[wandb]", "logger.wandb_offline=false"), tmp_path)
    assert online._offline is False  # as asked, though no API key is set


# --- the checks before training -------------------------------------------------------------------
def test_logger_check_names_a_missing_package_a_repeated_logger_and_a_negative_interval(conf, monkeypatch):
    check(conf("logger.every_n_steps=0"))  # 0: epochs only, allowed
    with pytest.raises(LoggerConfigError, match=r"^logger.every_n_steps=-1 is invalid: expected an integer >= 0$"):
        check(conf("logger.every_n_steps=-1"))
    with pytest.raises(LoggerConfigError, match=r"^logger.kinds: \['csv', 'csv'\] names a logger twice$"):
        check(conf("logger.kinds=[csv,csv]"))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else find_spec(name, *a))
    with pytest.raises(LoggerConfigError, match=r"^logger=mlflow needs the mlflow package: pip install 'burnlike\[loggers\]'$"):
        check(conf("logger.kinds=[csv,mlflow]"))


# --- the git commit -------------------------------------------------------------------------------
def test_git_commit_reads_the_checkout_and_marks_local_changes_dirty(tmp_path, monkeypatch):
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir(), elsewhere.mkdir()
    git(repo, "init", "-q")
    (repo / "f.txt").write_text("one\n")
    git(repo, "add", "f.txt")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    sha = git(repo, "rev-parse", "HEAD")
    monkeypatch.chdir(elsewhere)  # not a checkout: only `cwd` decides
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert git_commit(repo) == sha
    (repo / "untracked.txt").write_text("new\n")
    assert git_commit(repo) == sha
    (repo / "f.txt").write_text("two\n")
    assert git_commit(repo) == f"{sha}-dirty"
    assert git_commit(elsewhere) is None


def test_git_commit_reads_a_checkout_whose_changed_file_names_are_not_utf8(tmp_path, monkeypatch):
    """`git status` prints names as they are with core.quotePath=false: a Latin-1 name made the
    text decode raise, where git_commit promises a commit or None."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "core.quotePath", "false")
    name = os.fsdecode(b"caf\xe9.txt")  # not UTF-8
    (repo / name).write_text("one\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    sha = git(repo, "rev-parse", "HEAD")
    (repo / name).write_text("two\n")
    assert git_commit(repo) == f"{sha}-dirty"


@pytest.mark.slow  # a child process
def test_git_commit_is_the_running_scripts_checkout_not_the_current_directorys(tmp_path, monkeypatch):
    """The code that trains is the script's (train.py, or another repo's own): a run started from
    another folder, or from inside another repo, still records the script's commit."""
    repo, elsewhere = tmp_path / "repo", tmp_path / "other"
    repo.mkdir(), elsewhere.mkdir()
    for folder in (repo, elsewhere):
        git(folder, "init", "-q")
        (folder / "f.txt").write_text(folder.name)
        git(folder, "add", "f.txt")
        git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    script = repo / "train_here.py"
    script.write_text("from burnlike.app.loggers import git_commit\nprint(git_commit())\n")
    git(repo, "add", "train_here.py")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "script")
    env = {**os.environ, "PYTHONPATH": str(REPO), "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    out = subprocess.run([sys.executable, str(script)], cwd=elsewhere, env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == git(repo, "rev-parse", "HEAD") != git(elsewhere, "rev-parse", "HEAD")


@pytest.mark.parametrize("hangs", ["rev-parse", "status"])
def test_git_commit_gives_up_on_a_git_that_hangs(tmp_path, monkeypatch, hangs):
    """A git stuck on a lock or a network filesystem: no commit recorded, and the run goes on."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\ncase "$*" in *{hangs}*) exec sleep 30;; esac\necho 0123abcd\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(loggers, "GIT_TIMEOUT_S", 0.5)
    assert git_commit(tmp_path) is None


# --- what a run of the app logs, and its resume -----------------------------------------------------
def test_app_mlflow_file_store_holds_epochs_config_and_resume_continues_the_run(mlp_conf, tmp_path):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    run(mlp_conf("learner.summary=false", "logger=mlflow", "learner.num_epochs=1"), tmp_path)
    run(mlp_conf("learner.summary=false", "logger=mlflow", "learner.num_epochs=2", "learner.checkpoint=1"), tmp_path)
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").resolve().as_uri())
    experiment = client.get_experiment_by_name("burnlike")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1  # the resumed run continued the same MLflow run
    history = client.get_metric_history(runs[0].info.run_id, "valid/Accuracy")
    assert sorted(m.step for m in history) == [1, 2]
    params = runs[0].data.params
    assert params["config/learner/num_epochs"] == "1" and params["config/optimized_metric"] == "valid/Accuracy"
    assert "git_commit" in params


def test_app_wandb_offline_run_dir_holds_epochs_and_config(mlp_conf, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    run(mlp_conf("learner.summary=false", "logger=wandb", "learner.num_epochs=1"), tmp_path)
    run(mlp_conf("learner.summary=false", "logger=wandb", "learner.num_epochs=2", "learner.checkpoint=1"), tmp_path)
    runs = sorted((tmp_path / "wandb").glob("offline-run-*"))
    assert runs, list((tmp_path / "wandb").iterdir())
    # offline-run-<date>_<time>-<id>, plus "-1" when both fits started in the same second
    ids = {re.fullmatch(r"offline-run-\d{8}_\d{6}-([a-z0-9]+)(-\d+)?", p.name)[1] for p in runs}
    assert len(ids) == 1  # the resumed fit continued the same W&B run id
    history, config = [], {}
    for offline in runs:
        for record in wandb_records(next(offline.glob("*.wandb"))):
            if record.WhichOneof("record_type") == "history":
                history.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item})
            elif record.WhichOneof("record_type") == "config":
                config.update({i.key: json.loads(i.value_json) for i in record.config.update})
    epochs = [h["trainer/global_step"] for h in history if "valid/Accuracy" in h]
    assert epochs == [1, 2]
    assert config["config"]["optimized_metric"] == "valid/Accuracy"


# --- where MLflow's file store goes, and the script's folder ----------------------------------------
def test_mlflow_file_store_goes_to_the_local_dir_given_for_an_object_store_run(conf, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)  # _mlflow sets it: restored afterwards
    (logger,) = build_loggers(conf("logger.kinds=[mlflow]"), "memory://bucket/run", local_dir=tmp_path / "local")
    assert logger._tracking_uri == (tmp_path / "local" / "mlruns").resolve().as_uri()


def test_mlflow_file_store_of_an_object_store_run_without_a_local_dir_is_in_the_current_folder(conf, tmp_path,
                                                                                                monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)  # _mlflow sets it: restored afterwards
    monkeypatch.chdir(tmp_path)
    (logger,) = build_loggers(conf("logger.kinds=[mlflow]"), "memory://bucket/run")
    assert logger._tracking_uri == (tmp_path / "mlruns").resolve().as_uri()


def test_script_dir_is_the_folder_of_the_main_module_and_none_without_a_file(tmp_path, monkeypatch):
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert script_dir() is None  # an interactive session's __main__ has no __file__
    main.__file__ = str(tmp_path / "train.py")
    assert script_dir() == tmp_path.resolve()
