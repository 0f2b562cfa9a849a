"""The app's config reaches what it configures, third pass over issue 17's mutation sample of
`burnlike.app` (2026-11-25): every `validate` check names its own key and bound; Burn's execution
strategies and the trainer limits reach Lightning's Trainer; the loggers get the run's name, hyper-
parameters and directories; the rank check reads each launcher's variable. Real Hydra composition,
real Lightning loggers (MLflow, W&B when installed), a real tiny MNIST run."""

import contextlib
import importlib
import logging
import os
import re
from typing import Any

import pytest
from idx import write_mnist_idx
from omegaconf import OmegaConf
from torch import nn

from burnlike.app.loggers import _wandb, build_loggers, hyperparams
from burnlike.app.run import (
    AppConfigError,
    MetricTracker,
    build_model,
    execution,
    is_rank_zero,
    recorder_names,
    run,
    validate,
)
from burnlike.train import LearnerBuilder

SMALL = ["model=mlp", "model.hidden_sizes=[8]", "learner.progress_bar=false", "learner.summary=false",
         "learner.checkpointing=false"]



# --- validate: one check per key, each naming that key and its bound -----------------------------------------

@pytest.mark.parametrize(("override", "message"), [
    ("trainer.num_nodes=0", "trainer.num_nodes=0 is invalid: expected an integer >= 1"),
    ("learner.num_epochs=0", "learner.num_epochs=0 is invalid: expected an integer >= 1"),
    ("learner.grads_accumulation=0", "learner.grads_accumulation=0 is invalid: expected an integer >= 1"),
    ("data.batch_size=0", "data.batch_size=0 is invalid: expected an integer >= 1"),
    ("data.num_workers=-1", "data.num_workers=-1 is invalid: expected an integer >= 0"),
    ("learner.recorder=pickle", "learner.recorder='pickle' is invalid: expected one of {names}"),
    ("learner.strategy=fsdp", "learner.strategy='fsdp' is invalid: expected null or one of "
                              "['single', 'multi', 'multi_sharded', 'ddp']"),
])
def test_each_checked_key_is_named_with_its_bound(conf, override, message):
    with pytest.raises(AppConfigError) as error:
        validate(conf(*SMALL, override))
    assert str(error.value) == message.format(names=recorder_names())


@pytest.mark.parametrize("override", ["trainer.num_nodes=1", "learner.num_epochs=1", "learner.grads_accumulation=1",
                                      "data.num_workers=0", "learner.recorder=bin_gz", "learner.strategy=single"])
def test_each_checks_bound_itself_is_valid(conf, override):
    validate(conf(*SMALL, override))


# --- Burn's execution strategies, the model, the rank -------------------------------------------------------

def test_an_execution_strategy_on_another_accelerator_is_named(conf):
    with pytest.raises(AppConfigError) as error:
        execution(conf("learner.strategy=single", "trainer.accelerator=mps", "trainer.devices=1"))
    assert str(error.value) == "learner.strategy=single needs trainer.accelerator=cpu or gpu, got mps"


def test_build_model_takes_a_plain_module_target_as_it_is():
    """A `_target_` that is the model itself (no `init`) is not asked for one."""
    model = build_model(OmegaConf.create({"model": {"_target_": "torch.nn.Linear", "in_features": 2,
                                                    "out_features": 3}}))
    assert isinstance(model, nn.Linear) and model.out_features == 3


@pytest.mark.parametrize("key", ["LOCAL_RANK", "NODE_RANK", "RANK", "SLURM_PROCID"])
def test_any_launchers_rank_variable_makes_a_process_not_rank_zero(monkeypatch, key):
    for k in ("LOCAL_RANK", "NODE_RANK", "RANK", "SLURM_PROCID"):
        monkeypatch.delenv(k, raising=False)
    assert is_rank_zero()
    monkeypatch.setenv(key, "1")
    assert not is_rank_zero()
    monkeypatch.setenv(key, "0")
    assert is_rank_zero()


# --- what run() hands the Learner, up to the start of training ----------------------------------------------

class Stop(Exception):
    """Raised by the spy once run() has built everything it configures: no training needed."""


@pytest.fixture
def built(monkeypatch):
    """What run() hands the builder (`trainer`, `logger` kwargs) and the tracker (`tracker_trainer`),
    recorded; run() then stops at the tracker, once everything is built (`Stop`)."""
    seen: dict[str, Any] = {}
    kwargs_of, logger_of = LearnerBuilder.trainer_kwargs, LearnerBuilder.with_logger
    tracker_init = MetricTracker.__init__

    def trainer_kwargs(self, **kwargs):
        seen["trainer"] = kwargs
        return kwargs_of(self, **kwargs)

    def with_logger(self, *loggers, **kwargs):
        seen["logger"] = kwargs
        return logger_of(self, *loggers, **kwargs)

    def tracker(self, key, path, store, trainer=None):
        tracker_init(self, key, path, store, trainer)
        seen["tracker_trainer"] = trainer
        raise Stop

    monkeypatch.setattr(LearnerBuilder, "trainer_kwargs", trainer_kwargs)
    monkeypatch.setattr(LearnerBuilder, "with_logger", with_logger)
    monkeypatch.setattr(MetricTracker, "__init__", tracker)
    return seen


def test_run_hands_the_trainer_its_limits_strategy_loggers_hyperparameters_and_the_tracker_its_trainer(
        conf, tmp_path, built):
    tiny = write_mnist_idx(tmp_path / "mnist", n_train=64, n_test=32)
    with pytest.raises(Stop):
        run(conf(*SMALL, f"data.root={tiny}", "learner.strategy=ddp", "trainer.devices=1",
                 "trainer.limit_train_batches=2", "trainer.limit_val_batches=1"), tmp_path / "run")
    trainer = built["trainer"]
    assert trainer["strategy"] == "ddp"  # Burn's ExecutionStrategy.ddp, not Lightning's "auto"
    assert trainer["limit_train_batches"] == 2 and trainer["limit_val_batches"] == 1
    hyperparams = built["logger"]["hyperparams"]
    assert isinstance(hyperparams, dict) and set(hyperparams) == {"config", "git_commit"}
    assert hyperparams["config"]["learner"]["strategy"] == "ddp"  # the run's own config.json
    import lightning as L

    assert isinstance(built["tracker_trainer"], L.Trainer)  # so only rank 0 writes result.json


def test_run_hands_the_trainer_the_apps_placement_fast_dev_run_and_extra_and_the_logger_its_interval(
        conf, tmp_path, built):
    tiny = write_mnist_idx(tmp_path / "mnist", n_train=64, n_test=32)
    with pytest.raises(Stop):
        run(conf(*SMALL, f"data.root={tiny}", "trainer=cpu", "trainer.fast_dev_run=true", "logger.every_n_steps=7",
                 "+trainer.extra.max_steps=${learner.num_epochs}", "learner.num_epochs=3"), tmp_path / "run")
    trainer = built["trainer"]
    assert trainer["strategy"] == "auto" and trainer["accelerator"] == "cpu" and trainer["num_nodes"] == 1
    assert trainer["fast_dev_run"] is True
    assert trainer["max_steps"] == 3  # trainer.extra passes through, interpolations resolved
    assert built["logger"]["every_n_steps"] == 7
    with pytest.raises(Stop):  # Burn's single-device strategy names no Lightning strategy: Lightning's "auto"
        run(conf(*SMALL, f"data.root={tiny}", "trainer=cpu", "learner.strategy=single"), tmp_path / "single")
    assert built["trainer"]["strategy"] == "auto" and built["trainer"]["devices"] == 1


def test_run_saves_the_model_durably_and_says_where(conf, tmp_path, caplog, disk_calls):
    tiny = write_mnist_idx(tmp_path / "mnist", n_train=64, n_test=32)
    with caplog.at_level(logging.INFO, logger="burnlike.app"):
        run(conf(*SMALL, f"data.root={tiny}", "learner.num_epochs=1", "trainer.limit_train_batches=1",
                 "trainer.limit_val_batches=1"), tmp_path / "run")
    saved = [r.getMessage() for r in caplog.records if r.name == "burnlike.app" and "saved" in r.getMessage()]
    assert saved == [f"saved the trained model to {tmp_path / 'run' / 'model.mpk'}"]
    synced = [inode for call, inode, *_ in disk_calls if call == "fsync"]
    assert (tmp_path / "run" / "model.mpk").stat().st_ino in synced  # a run's product survives a node crash


# --- loggers --------------------------------------------------------------------------------------------------

def test_mlflow_logs_under_the_runs_name_into_the_run_dir(conf, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (logger,) = build_loggers(conf(*SMALL, "logger=mlflow", "logger.name=my-sweep"), tmp_path)
    assert logger._experiment_name == "my-sweep"
    assert logger._tracking_uri == (tmp_path / "mlruns").resolve().as_uri()


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


def test_mlflow_gets_the_name_and_tracking_uri_and_a_file_store_only_in_the_run_dir(conf, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    uri = "http://127.0.0.1:9/mlflow"  # a tracking server (not contacted before the first log)
    (mlflow,) = build_loggers(conf("logger.kinds=[mlflow]", "logger.name=exp", f"logger.mlflow_tracking_uri={uri}"),
                              tmp_path)
    assert mlflow._tracking_uri == uri and "MLFLOW_ALLOW_FILE_STORE" not in os.environ
    build_loggers(conf("logger.kinds=[mlflow]"), tmp_path)  # the run dir's own file store: allowed explicitly
    assert os.environ["MLFLOW_ALLOW_FILE_STORE"] == "true"


def test_wandb_gets_the_project_and_offline_as_asked(conf, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    (wandb,) = build_loggers(conf("logger.kinds=[wandb]", "logger.name=proj", "logger.wandb_offline=true"), tmp_path)
    assert wandb._wandb_init["project"] == "proj" and wandb._offline is True
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    (online,) = build_loggers(conf("logger.kinds=[wandb]", "logger.wandb_offline=false"), tmp_path)
    assert online._offline is False  # as asked, though no API key is set


def test_the_csv_logger_and_hyperparameters_before_a_config_exists(conf, tmp_path):
    (csv,) = build_loggers(conf("logger.kinds=[csv]"), tmp_path)
    assert csv.name == "csv" and csv.root_dir == str(tmp_path / "csv")
    assert hyperparams(tmp_path / "no-run-yet")["config"] == {}


# --- the config tree -------------------------------------------------------------------------------------------

def test_config_tree_shows_each_group_as_yaml(conf, terminal):
    from burnlike.app.tree import print_config

    out = terminal()
    print_config(conf("model=mlp", "model.hidden_sizes=[8]"))
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    lines = [line.strip("│ ") for line in text.splitlines()]
    assert "hidden_sizes:" in lines and "- 8" in lines  # YAML, not a dict's repr
    assert "{'" not in text



@pytest.mark.parametrize("fails", [False, True], ids=["after-the-fit", "after-an-error"])
def test_a_job_ends_its_process_group_with_a_barrier_only_after_the_fit(one_rank_group, monkeypatch, fails):
    """Every job ends its process group itself (not only multirun jobs): after a fit all ranks meet
    at a barrier first; after an error there is none, since the other ranks may be gone."""
    app_run = importlib.import_module("burnlike.app.run")  # the module (burnlike.app.run is also a function)
    dist = one_rank_group
    barriers: list[int] = []
    original = dist.barrier

    def counting(*args: object, **kwargs: object) -> object:
        barriers.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(dist, "barrier", counting)
    monkeypatch.setattr(app_run, "_is_multirun", lambda: False)
    monkeypatch.setenv("MASTER_PORT", "12345")
    with pytest.raises(RuntimeError) if fails else contextlib.nullcontext():
        with app_run._distributed_job():
            assert dist.is_initialized()
            if fails:
                raise RuntimeError("a rank failed")
    assert not dist.is_initialized()
    assert barriers == ([] if fails else [1])
    assert os.environ["MASTER_PORT"] == "12345"  # a single job's environment is left as it is


def test_config_tree_styles_resolved_values_and_scalars(colour_terminal):
    """The terminal tree: a dim root and guides, bold group names, interpolations resolved, a
    top-level scalar as itself, YAML keys in the terminal's 16 colours (not a truecolor theme)."""
    from omegaconf import OmegaConf

    from burnlike.app.tree import print_config

    out = colour_terminal()
    print_config(OmegaConf.create({"model": {"width": 8, "name": "w${model.width}"}, "seed": 7}))
    raw = out.getvalue()
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    lines = [line.strip("│├└─ ") for line in text.splitlines()]
    assert "name: w8" in lines and "7" in lines, lines  # resolved; the scalar's own value
    assert raw.startswith("\x1b[2mconfig"), repr(raw[:40])
    assert re.search(r"\x1b\[2m├── \x1b\[0m\x1b\[1;2mmodel", raw), repr(raw)  # dim guide; bold name (in the dim tree)
    key = re.search(r"\x1b\[([0-9;]+)mwidth", raw)
    assert key and "38" not in key[1].split(";"), raw  # not a truecolor/256-colour theme
    assert key[1].split(";")[-1] in {str(c) for c in [*range(30, 38), *range(90, 98)]}, raw  # one of 16 colours


def test_register_configs_stores_every_schema_and_the_resolver_from_scratch(monkeypatch):
    """On a store without them (every other test composes after conftest already registered them)."""
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from burnlike.app.schema import SCHEMAS, register_configs

    repo = ConfigStore.instance().repo
    monkeypatch.delitem(repo, "schema", raising=False)
    OmegaConf.clear_resolver("burnlike.sweep_direction")
    register_configs()
    for path in SCHEMAS:  # schema/<group>/<name>.yaml, and schema/app.yaml
        *groups, name = ["schema", *path.split("/")]
        node = repo
        for group in groups:
            node = node[group]
        assert f"{name}.yaml" in node, path
    assert "app.yaml" in repo["schema"] and "mnist.yaml" not in repo["schema"]
    assert OmegaConf.create({"m": "valid/Loss", "d": "${burnlike.sweep_direction:${m}}"}).d == "minimize"
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[1] / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["model=tabular", "data=csv", "optimizer=lbfgs"])
    GlobalHydra.instance().clear()
    assert cfg.model.num_features is not None and cfg.data.delimiter == "," and "history_size" in cfg.optimizer
