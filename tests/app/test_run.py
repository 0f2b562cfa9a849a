"""`burnlike.app.run`: how the app turns a composed config into a training run. `validate` and
`check_devices` refuse what training can't use with the key named, before anything heavy starts;
`execution` maps `learner.strategy` (Burn's ExecutionStrategy) onto Lightning's devices; the
optimized metric's direction decides the sweep's and result.json's best epoch; errors from
Lightning's Trainer and from resuming name the override to change; a multirun job's DDP falls back
to ddp_spawn where Lightning can't start only this job's ranks; and `run` itself trains, saves,
and writes result.json as configured."""

from __future__ import annotations

import contextlib
import errno
import importlib
import json
import logging
import math
import os
import re
from typing import Any

import lightning as L
import pytest
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from lightning.pytorch.strategies.launchers import subprocess_script
from omegaconf import OmegaConf, open_dict, read_write
from torch import nn

from burnlike.app.ddp import job_subprocess_cmd
from burnlike.app.run import (
    METRICS,
    AppConfigError,
    MetricTracker,
    _is_multirun,
    _resume_point,
    build_model,
    check_devices,
    execution,
    is_rank_zero,
    output_dir,
    recorder_names,
    resume_error,
    run,
    sweep_direction,
    trainer_error,
    trainer_strategy,
    validate,
)
from burnlike.models.mlp import MlpConfig
from burnlike.record import BinGzFileRecorder, SaveError, load_checkpoint
from burnlike.train import ExecutionStrategy, LearnerBuilder
from burnlike.train.logger import read_epochs
from burnlike.train.metric import AccuracyMetric, CudaMetric, LearningRateMetric, Metric
from burnlike.train.metric.store import EpochEntry, MetricStore, Split
from burnlike.train.sharded import ShardedStrategy
from tests.app.helpers import APP_HIDDEN_SIZE, REGRESSION, SMALL, write_regression_table
from tests.helpers.app import IMAGE
from tests.helpers.images import write_corrupt, write_splits


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


def dtypes(item) -> list[str]:
    """Every tensor's dtype in a record item, in order."""
    if isinstance(item, dict):
        if "dtype" in item:
            return [item["dtype"]]
        return [d for v in item.values() for d in dtypes(v)]
    if isinstance(item, list):
        return [d for v in item for d in dtypes(v)]
    return []


class NeedsDevice:
    """Another repo's model config whose init reads the device it is given."""

    def init(self, device: str) -> nn.Module:
        return nn.Linear(2, 2, device=torch.device(device))


# --- validate: the checks before training ---------------------------------------------------------
@pytest.mark.parametrize(("override", "message"), [
    ("learner.early_stopping_patience=0", "learner.early_stopping_patience=0 is invalid: expected null or an integer >= 1"),
    ("optimizer.lr=0.0", "optimizer.lr=0.0 is invalid: expected a number > 0"),
    ("learner.strategy=ddp", "learner.strategy=ddp and trainer.strategy=ddp both choose the Lightning strategy: set "
                             "one (trainer.strategy=auto with learner.strategy)"),
])
def test_validate_names_the_key_and_what_it_expects(conf, override, message):
    extra = ["trainer.strategy=ddp"] if override.startswith("learner.strategy") else []
    with pytest.raises(AppConfigError) as error:
        validate(conf(*SMALL, override, *extra))
    assert str(error.value) == message


@pytest.mark.parametrize(("overrides", "message"), [
    (["learner.num_iterations=10", "learner.valid_every=4"],
     "learner.num_iterations=10 is not a multiple of learner.valid_every=4: an epoch is valid_every iterations "
     "(e.g. learner.num_iterations=8)"),
    (["learner.valid_every=4", "trainer.limit_train_batches=2"],
     "learner.num_iterations/learner.valid_every and trainer.limit_train_batches=2.0 both set an epoch's batches: "
     "set one"),
])
def test_iteration_keys_that_contradict_are_named(conf, overrides, message):
    with pytest.raises(AppConfigError) as error:
        validate(conf(*SMALL, *overrides))
    assert str(error.value) == message


def test_async_save_without_checkpointing_is_refused(conf):
    with pytest.raises(AppConfigError) as error:
        validate(conf(*SMALL, "learner.async_save=true", "learner.checkpointing=false"))
    assert str(error.value) == "learner.async_save=true needs learner.checkpointing=true (nothing else is saved)"


@pytest.mark.parametrize(("override", "message"), [
    ("trainer.num_nodes=0", "trainer.num_nodes=0 is invalid: expected an integer >= 1"),
    ("learner.num_epochs=0", "learner.num_epochs=0 is invalid: expected an integer >= 1"),
    ("learner.grads_accumulation=0", "learner.grads_accumulation=0 is invalid: expected an integer >= 1"),
    ("data.batch_size=0", "data.batch_size=0 is invalid: expected an integer >= 1"),
    ("data.num_workers=-1", "data.num_workers=-1 is invalid: expected an integer >= 0"),
    ("learner.recorder=pickle", "learner.recorder='pickle' is invalid: expected one of {names}"),
    ("learner.strategy=fsdp", "learner.strategy='fsdp' is invalid: expected null or one of "
                              "['single', 'multi', 'multi_sharded', 'ddp']"),
    ("learner.num_iterations=0", "learner.num_iterations=0 is invalid: expected null or an integer >= 1"),
    ("learner.valid_every=0", "learner.valid_every=0 is invalid: expected null or an integer >= 1"),
])
def test_validate_names_each_checked_key_with_its_bound(conf, override, message):
    with pytest.raises(AppConfigError) as error:
        validate(conf(*SMALL, override))
    assert str(error.value) == message.format(names=recorder_names())


@pytest.mark.parametrize("override", ["trainer.num_nodes=1", "learner.num_epochs=1", "learner.grads_accumulation=1",
                                      "data.num_workers=0", "learner.recorder=bin_gz", "learner.strategy=single"])
def test_validate_accepts_each_checks_bound_itself(conf, override):
    validate(conf(*SMALL, override))


def test_a_batch_of_one_is_valid(conf):
    validate(conf(*SMALL, "data.batch_size=1"))


def test_an_unknown_metric_lists_the_known_ones(conf):
    with pytest.raises(AppConfigError, match=r"^learner\.metrics: unknown metric 'Bogus' \(expected some of \['"):
        validate(conf(*SMALL, "learner.metrics=[Loss,Bogus]"))


def test_an_unknown_logger_is_an_app_config_error_with_the_loggers_text(conf):
    with pytest.raises(AppConfigError) as error:
        validate(conf(*SMALL, "logger.kinds=[bogus]"))
    assert str(error.value).startswith("logger.kinds: unknown logger 'bogus' (expected some of [")


def test_validate_takes_a_train_metric_and_lists_the_logged_ones_otherwise(conf):
    validate(conf("optimized_metric=train/Loss"))
    with pytest.raises(AppConfigError, match=r"^optimized_metric='valid/Nope' is not logged by this run: expected one "
                                             r"of \['train/Accuracy', 'train/Loss', 'valid/Accuracy', 'valid/Loss'\] "
                                             r"\(learner.metrics decides what is logged\)$"):
        validate(conf("optimized_metric=valid/Nope"))


def test_an_optimized_metric_of_an_unknown_split_is_refused_by_name(conf):
    with pytest.raises(AppConfigError, match=r"^optimized_metric='test/Loss' is not logged by this run"):
        validate(conf(*SMALL, "optimized_metric=test/Loss"))


def test_resume_point_is_an_epoch_from_one_or_last():
    assert _resume_point("last") == "last" and _resume_point(" 3 ") == 3
    assert _resume_point("LAST") is None and _resume_point("0") is None


def test_validate_takes_an_optimizer_config_without_a_learning_rate(conf):
    """An optimizer option whose schema has no `lr` is not refused by the lr check."""
    cfg = OmegaConf.create(OmegaConf.to_container(conf(*SMALL)))  # a plain config: the schema's lr removable
    del cfg.optimizer["lr"]
    validate(cfg)


@pytest.mark.parametrize("value", ["abc", "0", "-1"])
def test_a_resume_point_that_is_no_epoch_is_named(conf, value):
    with pytest.raises(AppConfigError, match=rf"^learner.checkpoint={value} is invalid: expected an epoch >= 1 or 'last'"):
        validate(conf(*SMALL, f"learner.checkpoint='{value}'"))


# --- the optimized metric: its direction, result.json ---------------------------------------------
def test_sweep_direction_is_the_metrics_own_and_names_the_metrics_that_have_one():
    assert sweep_direction("valid/Accuracy") == "maximize" and sweep_direction("train/Loss") == "minimize"
    # Burn's directions (burn-train metric/learning_rate.rs: not higher-is-better; iteration.rs: higher)
    assert sweep_direction("train/Learning Rate") == "minimize"
    assert sweep_direction("train/Iteration Speed") == "maximize"
    names = str(sorted(METRICS)).replace("[", r"\[").replace("]", r"\]")
    for key in ("valid/Nope", "train/Cuda"):
        with pytest.raises(AppConfigError, match=rf"^optimized_metric='{key}': not a metric with a direction \(expected "
                                                 rf"<split>/<name> with a name among {names} that has one\)$"):
            sweep_direction(key)


def test_sweep_direction_reads_the_name_after_the_first_slash_only():
    """`<split>/<name>`: a key with a second slash names "x/Loss", no metric, not Loss."""
    with pytest.raises(AppConfigError, match=r"^optimized_metric='valid/x/Loss': not a metric with a direction"):
        sweep_direction("valid/x/Loss")


def test_optuna_search_composes_with_the_optimized_metrics_direction(conf):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    cfg = conf("hparams_search=mnist_optuna", return_hydra_config=True)
    assert cfg.hydra.sweeper.direction == "maximize" and "optimizer.lr" in cfg.hydra.sweeper.params
    assert cfg.hydra.mode == RunMode.MULTIRUN
    # the search's direction is the optimized metric's own
    cfg = conf("hparams_search=mnist_optuna", "optimized_metric=train/Loss", return_hydra_config=True)
    assert cfg.hydra.sweeper.direction == "minimize"


def test_metric_tracker_writes_only_on_its_splits_epochs_and_has_no_best_before_one(tmp_path):
    store = MetricStore()
    store.register([AccuracyMetric(), CudaMetric()])
    tracker = MetricTracker("valid/Accuracy", tmp_path / "result.json", store)
    store.add_listener(tracker)
    assert tracker.best_epoch() is None and math.isnan(tracker.best())
    store.end_epoch(Split.TRAIN, 1, {"Accuracy": EpochEntry(50.0)})  # the train split's Accuracy: not the key
    assert not (tmp_path / "result.json").exists()
    store.end_epoch(Split.VALID, 1, {"Accuracy": EpochEntry(60.0)})
    assert (tmp_path / "result.json").exists() and tracker.best() == 60.0
    with pytest.raises(AppConfigError, match=r"^optimized_metric='train/Cuda': the metric has no direction "
                                             r"\(higher_is_better=None\), so no epoch is best; optimize a metric such "
                                             r"as valid/Accuracy or valid/Loss$"):
        MetricTracker("train/Cuda", tmp_path / "lr.json", store)


def test_a_metric_whose_name_holds_a_slash_is_tracked_under_the_split_before_it(tmp_path):
    class TopK(Metric):
        name = "Top/5"
        unit = "%"
        higher_is_better = True

    store = MetricStore()
    store.register([TopK()])
    tracker = MetricTracker("valid/Top/5", tmp_path / "result.json", store)
    store.end_epoch(Split.VALID, 1, {"Top/5": EpochEntry(40.0)})
    assert (tracker.split, tracker.name) == (Split.VALID, "Top/5") and tracker.best() == 40.0


def test_result_json_takes_the_direction_from_the_metric(tmp_path):
    """A lower-is-better metric whose name doesn't say so: result.json must minimize it."""
    class ErrorRate(Metric):
        name = "Error Rate"
        unit = "%"
        higher_is_better = False

    store = MetricStore()
    store.register([ErrorRate(), LearningRateMetric(), CudaMetric()])
    tracker = MetricTracker("valid/Error Rate", tmp_path / "result.json", store)
    store.add_listener(tracker)
    for epoch, value in enumerate([30.0, 10.0, 20.0], 1):
        store.end_epoch(Split.VALID, epoch, {"Error Rate": EpochEntry(value)})
        store.end_epoch(Split.TRAIN, epoch, {"Learning Rate": EpochEntry(0.1)})
    result = json.loads((tmp_path / "result.json").read_text())
    assert result == {"optimized_metric": "valid/Error Rate", "mode": "min", "value": 10.0, "best_epoch": 2,
                      "epochs": {"1": 30.0, "2": 10.0, "3": 20.0}}
    assert tracker.best() == 10.0
    with pytest.raises(AppConfigError, match="'train/Cuda'.*no direction"):
        MetricTracker("train/Cuda", tmp_path / "lr.json", store)


# --- devices and execution strategies -------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_gpu_accelerator_without_cuda_is_named(conf):
    with pytest.raises(AppConfigError, match=r"^trainer.accelerator=gpu but torch sees no CUDA device \(use trainer=cpu"):
        check_devices(conf("trainer.accelerator=gpu"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_cuda_accelerator_without_cuda_is_named(conf):
    with pytest.raises(AppConfigError, match=r"^trainer.accelerator=cuda but torch sees no CUDA device"):
        check_devices(conf("trainer.accelerator=cuda"))


@pytest.mark.parametrize("devices", [0, -1])
def test_execution_needs_a_device_count(conf, devices):
    with pytest.raises(AppConfigError, match=rf"^learner.strategy=multi needs trainer.devices as a count or a list of "
                                             rf"indices, got {devices}$"):
        execution(conf("learner.strategy=multi", f"trainer.devices={devices}"))


def test_execution_refuses_a_boolean_device_count(conf):
    with pytest.raises(AppConfigError, match=r"learner.strategy=single needs trainer.devices as a count or a list of "
                                             r"indices, got True"):
        execution(conf("learner.strategy=single", "trainer.devices=true"))


def test_execution_on_cuda_names_cuda_devices(conf):
    kwargs = execution(conf("learner.strategy=single", "trainer.accelerator=cuda", "trainer.devices=1")).trainer_kwargs()
    assert kwargs["accelerator"] in ("gpu", "cuda") and kwargs["devices"] == [0]


def test_execution_auto_picks_the_gpu_torch_sees(conf, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # what torch reports on a GPU machine
    kwargs = execution(conf("learner.strategy=single", "trainer.devices=1")).trainer_kwargs()
    assert kwargs["accelerator"] in ("gpu", "cuda") and kwargs["devices"] == [0]


def test_an_execution_strategy_on_another_accelerator_is_named(conf):
    with pytest.raises(AppConfigError) as error:
        execution(conf("learner.strategy=single", "trainer.accelerator=mps", "trainer.devices=1"))
    assert str(error.value) == "learner.strategy=single needs trainer.accelerator=cpu or gpu, got mps"


def test_multi_sharded_execution_is_the_sharded_strategy_and_multi_is_not(conf):
    multi = execution(conf("learner.strategy=multi", "trainer.accelerator=cpu", "trainer.devices=2"))
    sharded = execution(conf("learner.strategy=multi_sharded", "trainer.accelerator=cpu", "trainer.devices=2"))
    assert multi.trainer_kwargs()["strategy"] == "ddp"
    assert isinstance(sharded.trainer_kwargs()["strategy"], ShardedStrategy)
    nodes = execution(conf("learner.strategy=multi_sharded", "trainer.accelerator=cpu", "trainer.devices=2",
                           "trainer.num_nodes=2"))
    assert nodes.trainer_kwargs()["num_nodes"] == 2


def test_app_learner_strategy_picks_the_execution_and_refuses_conflicts(conf, data, tmp_path):
    cfg = conf("model=mlp", "optimizer=muon", "learner.strategy=single", "learner.num_epochs=1",
               "learner.progress_bar=false", "learner.summary=false", f"data.root={data}")
    gpu = torch.cuda.is_available()  # trainer.accelerator=auto: a GPU when there is one
    assert execution(cfg) == ExecutionStrategy.single("cuda:0" if gpu else "cpu")
    best = run(cfg, tmp_path / "run")
    assert 0 <= best <= 100 and (tmp_path / "run" / "valid" / "epoch-1" / "Accuracy.log").exists()
    two = conf("learner.strategy=ddp", "trainer.devices=2", "trainer.num_nodes=2")
    assert execution(two).trainer_kwargs() == {"accelerator": "gpu" if gpu else "cpu", "devices": [0, 1] if gpu else 2,
                                               "strategy": "ddp",
                                               "num_nodes": 2}
    sharded = conf("learner.strategy=multi_sharded", "trainer.accelerator=gpu", "trainer.devices=[0,2]")
    kwargs = execution(sharded).trainer_kwargs()
    assert (kwargs["accelerator"], kwargs["devices"], type(kwargs["strategy"])) == ("gpu", [0, 2], ShardedStrategy)
    with pytest.raises(AppConfigError, match="learner.strategy=.*trainer.strategy=ddp"):
        validate(conf("learner.strategy=ddp", "trainer=ddp"))
    with pytest.raises(AppConfigError, match="learner.strategy='fast'"):
        validate(conf("learner.strategy=fast"))
    with pytest.raises(AppConfigError, match="one device"):
        execution(conf("learner.strategy=single", "trainer.devices=2"))


# --- errors from Lightning's Trainer and from resuming; fail --------------------------------------
@pytest.mark.parametrize(("override", "key", "value", "says"), [
    ("trainer.precision=bogus", "trainer.precision", "'bogus'", "Precision 'bogus' is invalid"),
    ("trainer.strategy=nonsense", "trainer.strategy", "'nonsense'", "invalid strategy name"),
])
def test_a_value_the_trainer_rejects_is_named_with_its_key(mlp_conf, tmp_path, override, key, value, says):
    with pytest.raises(AppConfigError) as err:
        run(mlp_conf(override), tmp_path)
    message = str(err.value)
    assert message.startswith(f"{key}: Lightning's Trainer rejected {key}={value}: ")
    assert says in message and "\n" not in message


def test_trainer_error_names_every_placement_key_when_the_message_names_none(mlp_conf):
    cfg = mlp_conf("trainer.precision=16-mixed")
    text = trainer_error(cfg, ValueError("something\n   went   wrong"))
    keys = "trainer.precision / trainer.strategy / trainer.devices / trainer.num_nodes / trainer.accelerator"
    assert text.startswith(f"{keys}: Lightning's Trainer rejected trainer.precision='16-mixed', ")
    assert text.endswith(": something went wrong")  # whitespace folded to one line
    assert "trainer.num_nodes=1" in text
    both = trainer_error(cfg, ValueError("devices and accelerator don't match"))
    assert both.startswith("trainer.devices / trainer.accelerator: Lightning's Trainer rejected trainer.devices=")


def test_resume_error_asks_for_checkpointing_or_says_no_checkpoints_exist(mlp_conf, tmp_path):
    off = mlp_conf("learner.checkpoint=last", "learner.checkpointing=false")
    assert resume_error(off, tmp_path, FileNotFoundError("x")) ==\
        "learner.checkpoint=last needs learner.checkpointing=true (nothing to resume from)"
    on = mlp_conf("learner.checkpoint=2", "learner.checkpointing=true")
    text = resume_error(on, tmp_path / "empty", FileNotFoundError("checkpoint(2): no checkpoint file"))
    assert text.startswith("learner.checkpoint=2: checkpoint(2): no checkpoint file. ")
    assert f"Checkpoints in {tmp_path / 'empty'}: none." in text


def test_resuming_a_missing_epoch_lists_the_run_dirs_checkpoints(mlp_conf, tmp_path):
    cfg = mlp_conf("learner.checkpoint=7", hydra_config=True)
    out = tmp_path / "run"
    (out / "checkpoint").mkdir(parents=True)
    for name in ("trainer-3.mpk", "trainer-1.mpk", "model-1.mpk"):
        (out / "checkpoint" / name).write_bytes(b"")
    with open_dict(cfg):
        cfg.hydra.runtime.output_dir = str(out)
    HydraConfig.instance().set_config(cfg)  # as in a Hydra job: the run dir is Hydra's output dir
    try:
        assert output_dir() == out
        with open_dict(cfg):
            del cfg["hydra"]
        with pytest.raises(AppConfigError) as err:
            run(cfg)
    finally:
        HydraConfig.instance().cfg = None
    assert str(err.value) == (f"learner.checkpoint=7: checkpoint(7): no checkpoint file at {out}/checkpoint/trainer-7.mpk. "
                              f"Checkpoints in {out}: trainer-1.mpk, trainer-3.mpk. "
                              "Resume inside the run's own dir: hydra.run.dir=<that run dir>")


# --- multirun jobs, ranks and process groups ------------------------------------------------------
def test_is_multirun_only_in_a_multirun_job(conf):
    assert not _is_multirun()  # outside Hydra
    HydraConfig.instance().set_config(conf(return_hydra_config=True))  # a single run
    try:
        assert not _is_multirun()
    finally:
        HydraConfig.instance().cfg = None


def test_a_multirun_ddp_job_keeps_ddp_with_lightnings_hook_and_spawns_without(multirun, monkeypatch):
    """trainer.strategy=ddp in a multirun job: ddp, its ranks started by this job's command
    (`burnlike.app.ddp`), where Lightning has the Hydra hook; ddp_spawn where it has none."""
    with read_write(multirun), open_dict(multirun):
        multirun.trainer.strategy = "ddp"
    monkeypatch.setattr(subprocess_script, "_hydra_subprocess_cmd", subprocess_script._hydra_subprocess_cmd)
    assert trainer_strategy(multirun) == "ddp" and subprocess_script._hydra_subprocess_cmd is job_subprocess_cmd
    monkeypatch.delattr(subprocess_script, "_hydra_subprocess_cmd")
    assert trainer_strategy(multirun) == "ddp_spawn"


def test_multirun_without_lightnings_hook_spawns_ddp(multirun, monkeypatch, caplog):
    monkeypatch.delattr(subprocess_script, "_hydra_subprocess_cmd")
    with caplog.at_level(logging.WARNING, logger="burnlike.app"):
        assert trainer_strategy(multirun, "ddp_find_unused_parameters_true") == "ddp_spawn_find_unused_parameters_true"
        assert trainer_strategy(multirun, "ddp") == "ddp_spawn"
    assert "multirun: this Lightning has no Hydra launcher hook; using ddp_spawn for this job" in caplog.messages


def test_only_the_leading_ddp_of_a_strategy_name_becomes_ddp_spawn(multirun, monkeypatch):
    """A strategy registered under a name holding "ddp" twice keeps its later "ddp"."""
    monkeypatch.delattr(subprocess_script, "_hydra_subprocess_cmd")
    assert trainer_strategy(multirun, "ddp_find_unused_parameters_true_ddp") == \
        "ddp_spawn_find_unused_parameters_true_ddp"


@pytest.mark.parametrize("key", ["LOCAL_RANK", "NODE_RANK", "RANK", "SLURM_PROCID"])
def test_any_launchers_rank_variable_makes_a_process_not_rank_zero(monkeypatch, key):
    for k in ("LOCAL_RANK", "NODE_RANK", "RANK", "SLURM_PROCID"):
        monkeypatch.delenv(k, raising=False)
    assert is_rank_zero()
    monkeypatch.setenv(key, "1")
    assert not is_rank_zero()
    monkeypatch.setenv(key, "0")
    assert is_rank_zero()


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


# --- the model and the console --------------------------------------------------------------------
def test_build_model_takes_a_plain_module_target_as_it_is():
    """A `_target_` that is the model itself (no `init`) is not asked for one."""
    model = build_model(OmegaConf.create({"model": {"_target_": "torch.nn.Linear", "in_features": 2,
                                                    "out_features": 3}}))
    assert isinstance(model, nn.Linear) and model.out_features == 3


def test_build_model_hands_init_the_cpu():
    model = build_model(OmegaConf.create({"model": {"_target_": f"{__name__}.NeedsDevice"}}))
    assert isinstance(model, nn.Linear) and model.weight.device.type == "cpu"


# --- what run() hands Lightning -------------------------------------------------------------------
def test_run_passes_limits_ddp_strategy_and_hyperparams_and_gives_the_tracker_the_trainer(
        conf, data, tmp_path, built):
    with pytest.raises(Stop):
        run(conf(*SMALL, f"data.root={data}", "learner.strategy=ddp", "trainer.devices=1",
                 "trainer.limit_train_batches=2", "trainer.limit_val_batches=1"), tmp_path / "run")
    trainer = built["trainer"]
    assert trainer["strategy"] == "ddp"  # Burn's ExecutionStrategy.ddp, not Lightning's "auto"
    assert trainer["limit_train_batches"] == 2 and trainer["limit_val_batches"] == 1
    hyperparams = built["logger"]["hyperparams"]
    assert isinstance(hyperparams, dict) and set(hyperparams) == {"config", "git_commit"}
    assert hyperparams["config"]["learner"]["strategy"] == "ddp"  # the run's own config.json
    assert isinstance(built["tracker_trainer"], L.Trainer)  # so only rank 0 writes result.json


def test_run_passes_placement_fast_dev_run_and_extra_kwargs_and_the_logger_interval(
        conf, data, tmp_path, built):
    with pytest.raises(Stop):
        run(conf(*SMALL, f"data.root={data}", "trainer=cpu", "trainer.fast_dev_run=true", "logger.every_n_steps=7",
                 "+trainer.extra.max_steps=${learner.num_epochs}", "learner.num_epochs=3"), tmp_path / "run")
    trainer = built["trainer"]
    assert trainer["strategy"] == "auto" and trainer["accelerator"] == "cpu" and trainer["num_nodes"] == 1
    assert trainer["fast_dev_run"] is True
    assert trainer["max_steps"] == 3  # trainer.extra passes through, interpolations resolved
    assert built["logger"]["every_n_steps"] == 7
    with pytest.raises(Stop):  # Burn's single-device strategy names no Lightning strategy: Lightning's "auto"
        run(conf(*SMALL, f"data.root={data}", "trainer=cpu", "learner.strategy=single"), tmp_path / "single")
    assert built["trainer"]["strategy"] == "auto" and built["trainer"]["devices"] == 1


# --- runs -----------------------------------------------------------------------------------------
def test_run_creates_nested_run_dirs_before_the_data_checks(conf, tmp_path):
    out = tmp_path / "a" / "b"
    with pytest.raises(AppConfigError, match=r"^data.root="):
        run(conf(*SMALL, f"data.root={tmp_path / 'nowhere'}"), out)
    assert json.loads((out / "config.json").read_text())["learner"]["num_epochs"] >= 1


@pytest.mark.parametrize(("override", "key"), [("learner.early_stopping_patience=0", "learner.early_stopping_patience"),
                                               ("learner.early_stopping_patience=-1", "learner.early_stopping_patience"),
                                               ("data.num_workers=-1", "data.num_workers")])
def test_bad_values_are_refused_before_training_naming_the_key(app, tmp_path, override, key):
    with pytest.raises(AppConfigError, match=re.escape(f"{key}=") + r"-?\d+ is invalid"):
        app(tmp_path, "learner.num_epochs=1", override)
    assert not (tmp_path / "train").exists()  # refused before training started


def test_run_limits_batches_without_a_progress_bar(conf, tiny_app, tmp_path, capfd):
    value = run(conf(*SMALL, f"data.root={tiny_app}", "learner.num_epochs=1", "trainer.limit_train_batches=2",
                     "optimized_metric=valid/Loss"), tmp_path / "run")
    assert len((tmp_path / "run" / "train" / "epoch-1" / "Loss.log").read_text().splitlines()) == 2
    text = (tmp_path / "run" / "result.json").read_text()
    assert text == json.dumps(json.loads(text), indent=2) + "\n" and json.loads(text)["value"] == value
    out, err = capfd.readouterr()
    assert "it/s" not in out + err and "Epoch 0" not in out + err


def test_run_saves_the_model_durably_and_says_where(conf, data, tmp_path, caplog, disk_calls):
    with caplog.at_level(logging.INFO, logger="burnlike.app"):
        run(conf(*SMALL, f"data.root={data}", "learner.num_epochs=1", "trainer.limit_train_batches=1",
                 "trainer.limit_val_batches=1"), tmp_path / "run")
    saved = [r.getMessage() for r in caplog.records if r.name == "burnlike.app" and "saved" in r.getMessage()]
    assert saved == [f"saved the trained model to {tmp_path / 'run' / 'model.mpk'}"]
    synced = [inode for call, inode, *_ in disk_calls if call == "fsync"]
    assert (tmp_path / "run" / "model.mpk").stat().st_ino in synced  # a run's product survives a node crash


def test_matmul_precision_sets_torchs_for_the_run_and_is_checked(mlp_conf, tmp_path):
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        run(mlp_conf("learner.num_epochs=1", "learner.summary=false", "trainer=cpu"), tmp_path / "unset")
        assert torch.get_float32_matmul_precision() == "highest"  # null: left as it was
        run(mlp_conf("learner.num_epochs=1", "learner.summary=false", "trainer=cpu", "trainer.matmul_precision=high"),
            tmp_path / "set")
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(before)
    with pytest.raises(AppConfigError, match=r"^trainer.matmul_precision='fast' is invalid: expected null or one of "
                                             r"\['highest', 'high', 'medium'\]$"):
        run(mlp_conf("trainer.matmul_precision=fast"), tmp_path / "bad")


def test_optimized_valid_loss_is_the_minimum_over_epochs(app, tmp_path):
    value, result = app(tmp_path, "optimized_metric=valid/Loss", "learner.num_epochs=3", "optimizer.lr=0.003")
    epochs = {int(e): v for e, v in result["epochs"].items()}
    assert list(epochs) == [1, 2, 3] and max(epochs.values()) > min(epochs.values())
    assert value == result["value"] == min(epochs.values())
    assert result["mode"] == "min" and epochs[result["best_epoch"]] == value
    logged = read_epochs(tmp_path, "valid", "Loss")  # what the Burn-layout logs hold
    assert logged == pytest.approx(epochs, rel=1e-6)


def test_optimized_accuracy_is_the_maximum_over_epochs(app, tmp_path):
    value, result = app(tmp_path, "learner.num_epochs=2", "optimizer.lr=0.0003")
    epochs = {int(e): v for e, v in result["epochs"].items()}
    assert list(epochs) == [1, 2] and epochs[1] != epochs[2]
    assert value == result["value"] == max(epochs.values()) and result["mode"] == "max"
    assert epochs == pytest.approx(read_epochs(tmp_path, "valid", "Accuracy"), rel=1e-6)
    assert all(math.isclose(v * 1.28, round(v * 1.28), abs_tol=1e-9) for v in epochs.values())  # k of 128


@pytest.mark.parametrize(("patience", "epochs"), [(1, 2), (2, 3)])
def test_early_stopping_patience_stops_a_flat_loss_run_after_patience_epochs(app, tmp_path, patience, epochs):
    # lr 1e-30: the weights can't move, so the valid loss never strictly improves after epoch 1
    _, result = app(tmp_path, "optimizer=sgd", "optimizer.lr=1e-30", "learner.num_epochs=5",
                    "optimized_metric=valid/Loss", f"learner.early_stopping_patience={patience}")
    assert len(set(result["epochs"].values())) == 1  # the premise: a flat validation loss
    assert list(result["epochs"]) == [str(e) for e in range(1, epochs + 1)]
    assert sorted(p.name for p in (tmp_path / "valid").iterdir()) == [f"epoch-{e}" for e in range(1, epochs + 1)]


def test_learner_recorder_bin_gz_saves_model_and_epoch_checkpoints_in_half_precision(app, tmp_path):
    app(tmp_path, "learner.recorder=bin_gz", "learner.checkpointing=true", "learner.num_epochs=1")
    model = MlpConfig(hidden_sizes=[APP_HIDDEN_SIZE]).init()
    metadata, item = BinGzFileRecorder().read_record(tmp_path / "model.bin.gz", module=model)
    assert metadata["float"] == "half::binary16::f16" and metadata["settings"] == "HalfPrecisionSettings"
    assert metadata["format"].startswith("burn_core::record::file::BinGzFileRecorder<")
    assert dtypes(item) == ["F16"] * 4  # two Linear layers: weight and bias each
    # Burn's per-epoch layout: checkpoint/model-N is a plain module record at the recorder's precision
    _, epoch_item = BinGzFileRecorder().read_record(tmp_path / "checkpoint" / "model-1.bin.gz",
                                                    module=MlpConfig(hidden_sizes=[APP_HIDDEN_SIZE]).init())
    assert dtypes(epoch_item) == ["F16"] * 4


@pytest.mark.parametrize("summary", [True, False])
def test_learner_summary_prints_burns_table_or_nothing(app, tmp_path, capsys, summary):
    app(tmp_path, "learner.num_epochs=1", f"learner.summary={str(summary).lower()}")
    out = capsys.readouterr().out
    assert ("Learner Summary" in out) is summary
    assert ("| Valid | Accuracy |" in out) is summary


def test_run_trains_on_image_folder_skipping_corrupt_and_on_a_csv_regression(conf, tmp_path):
    """The app's own run(): a corrupt image left out when asked (with a warning naming it), then a
    regression that learns."""
    broken = write_splits(tmp_path / "broken", classes=3, train=3, valid=1)
    bad = write_corrupt(broken / "train" / "class1" / "0000.png", "truncated")
    cfg = conf(*IMAGE, f"data.root={broken}", "learner.num_epochs=1", "data.skip_corrupt=true")
    with pytest.warns(UserWarning, match=f"skipped 1 of 9 images that don't decode: {bad}"):
        best = run(cfg, tmp_path / "img")
    result = json.loads((tmp_path / "img" / "result.json").read_text())
    assert result["optimized_metric"] == "valid/Accuracy" and result["value"] == best and 0 <= best <= 100
    assert (tmp_path / "img" / "model.mpk").exists() and (tmp_path / "img" / "valid" / "epoch-1" / "Accuracy.log").exists()
    write_regression_table(tmp_path / "t.csv", n=200)
    loss = run(conf(*REGRESSION, f"data.root={tmp_path}", "learner.num_epochs=3", "optimizer.lr=0.02",
                    "data.batch_size=16"), tmp_path / "reg")
    first = json.loads((tmp_path / "reg" / "result.json").read_text())["epochs"]["1"]
    assert loss < first and loss < 1.0  # learns y = 2a - b (variance 5) well within three epochs


# --- a checkpoint that can't be written ------------------------------------------------------------
@pytest.mark.parametrize(("code", "advice"), [(errno.ENOSPC, "No space left on device"),
                                               (errno.EROFS, "Read-only file system")])
def test_a_failed_checkpoint_ends_the_run_naming_the_file_and_lists_no_unsaved_epoch(
        mlp_conf, tmp_path, monkeypatch, code, advice):
    """A full or read-only disk at epoch 2's checkpoint: a SaveError naming the file (train.py turns
    it into one `error:` line and status 2), result.json lists epoch 1 only, whose checkpoint loads."""
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if os.path.basename(dst).endswith("-2.mpk"):
            raise OSError(code, os.strerror(code))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(SaveError) as failed:
        run(mlp_conf("learner.num_epochs=2", "learner.summary=false"), tmp_path)
    message = str(failed.value)
    assert advice in message and "could not save (the previous file, if any, is unchanged)" in message
    assert re.search(rf"'{re.escape(str(tmp_path / 'checkpoint'))}/(model|optim|scheduler|trainer)-2\.mpk'$", message)
    result = json.loads((tmp_path / "result.json").read_text())
    assert list(result["epochs"]) == ["1"] and result["best_epoch"] == 1
    monkeypatch.setattr(os, "replace", real_replace)
    assert load_checkpoint(tmp_path / "checkpoint" / "trainer-1.mpk")["epoch"] == 0
    assert not list((tmp_path / "checkpoint").glob("*.tmp"))  # the temp file went with the failure


def test_artifacts_choose_where_the_config_is_saved(conf, tmp_path):
    """`artifacts=` (a folder or an object store URL) holds the run's files, Hydra's run dir only its logs:
    config.json is written there first, before the data is even read."""
    store = tmp_path / "store"
    with pytest.raises(AppConfigError, match=r"^model: CnnConfig reads the batches of data=image_folder"):
        run(conf("model=cnn", f"artifacts={store}"), artifact_dir=tmp_path / "local")
    assert (store / "config.json").is_file() and not (tmp_path / "local" / "config.json").exists()


def test_a_requeued_run_with_nothing_to_resume_says_so_once(mlp_conf, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="burnlike"):
        run(mlp_conf("model.hidden_sizes=[8]", "learner.summary=false", "learner.checkpoint=last",
                     "learner.num_epochs=1", "trainer.limit_train_batches=1", "trainer.limit_val_batches=1"),
            tmp_path / "run")
    notes = [r.getMessage() for r in caplog.records if "checkpoint('last')" in r.getMessage()]
    assert notes == [f"checkpoint('last'): no checkpoint in {tmp_path / 'run' / 'checkpoint'} yet; training from the start"]


# --- distributed jobs: the process group's timeout, what ddp_spawn sends, the run dir's lock -------
@pytest.mark.parametrize("placement", [
    ["trainer=ddp", "trainer.accelerator=cpu"],
    ["trainer=ddp_spawn", "trainer.accelerator=cpu"],
    ["trainer=fsdp", "trainer.accelerator=cpu"],
    ["trainer=cpu", "trainer.devices=2"],  # Lightning's "auto" over two processes: DDP
    ["trainer=cpu", "trainer.devices=2", "learner.strategy=multi_sharded"],
], ids=lambda p: "+".join(p))
def test_dist_timeout_is_the_process_groups_timeout_on_the_trainers_strategy(conf, data, tmp_path, built, placement):
    from datetime import timedelta

    with pytest.raises(Stop):
        run(conf(*SMALL, f"data.root={data}", *placement, "learner.checkpointing=true", "learner.dist_timeout=60"),
            tmp_path / "run")
    assert built["tracker_trainer"].strategy._timeout == timedelta(seconds=60)
    with pytest.raises(Stop):  # unset: torch's own default (30 min)
        run(conf(*SMALL, f"data.root={data}", *placement, "learner.checkpointing=true"), tmp_path / "default")
    assert built["tracker_trainer"].strategy._timeout == timedelta(minutes=30)


class Sent(Exception):
    """Raised where ddp_spawn would start its processes, once what it sends them has pickled."""


@pytest.fixture
def spawn_payload(monkeypatch):
    """ddp_spawn's launcher without its processes: what it hands `start_processes` is pickled as
    spawn pickles it (multiprocessing's ForkingPickler, torch's reductions registered) and read
    back; the bytes are kept in the returned list and `Sent` stops the fit."""
    import pickle
    from multiprocessing.queues import SimpleQueue
    from multiprocessing.reduction import ForkingPickler

    from lightning.pytorch.strategies.launchers import multiprocessing as launchers

    sent: list[bytes] = []

    def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
        # the results queue is multiprocessing's, passed by a spawn's inheritance, not pickled
        ours = [a for a in args if not isinstance(a, SimpleQueue)]
        data = bytes(ForkingPickler.dumps((fn, ours)))
        pickle.loads(data)
        sent.append(data)
        raise Sent

    monkeypatch.setattr(launchers.mp, "start_processes", start_processes)
    return sent


@pytest.mark.parametrize("options", [
    ["logger=csv", "learner.async_save=true", "learner.early_stopping_patience=2", "learner.progress_bar=true",
     "learner.metrics=[Accuracy,Loss,Learning Rate,Iteration Speed]"],
    ["logger=many", "learner.recorder=compact", "learner.checkpoint=last", "learner.summary=true"],
    ["logger=mlflow"],
    ["logger=wandb"],
], ids=["csv+async+early-stopping+bar+metrics", "csv+tensorboard+compact+resume", "mlflow", "wandb"])
def test_everything_ddp_spawn_sends_its_processes_pickles(conf, data, tmp_path, spawn_payload, options, monkeypatch):
    """The trainer, its strategy, callbacks, loggers and plugins, the module with its metric store
    and the store's listeners, and the loaders: ddp_spawn pickles them all into each process (a
    closure anywhere among them breaks `trainer=ddp_spawn`)."""
    for kind in ("mlflow", "wandb"):
        if f"logger={kind}" in options:
            pytest.importorskip(kind)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    with pytest.raises(Sent):
        run(conf(*SMALL, f"data.root={data}", "trainer=ddp_spawn", "trainer.accelerator=cpu", "learner.checkpointing=true",
                 *options), tmp_path / "run")
    assert len(spawn_payload) == 1 and len(spawn_payload[0]) > 0


def test_a_job_holds_its_artifact_dir_while_it_runs_and_a_second_job_is_refused(conf, data, tmp_path, built):
    """The lock is taken before anything is written (config.json included) and let go when the
    job ends, however it ends; `learner.lock_timeout=0` takes none."""
    from burnlike.app.lock import LOCK, RunDirBusy, RunDirLock, read_holder

    out = tmp_path / "run"
    seen = []
    tracker_init = MetricTracker.__init__

    def tracker(self, *args, **kwargs):
        seen.append(read_holder(out / LOCK))
        tracker_init(self, *args, **kwargs)  # the `built` spy's: raises Stop

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MetricTracker, "__init__", tracker)
        with pytest.raises(Stop):
            run(conf(*SMALL, f"data.root={data}"), out)
    assert seen[0] is not None and seen[0].pid == os.getpid()  # held during the run
    assert not (out / LOCK).exists()  # let go when it stopped
    with RunDirLock(out, timeout=60):
        (out / "config.json").unlink()
        with pytest.raises(RunDirBusy, match="is in use by another job"):
            run(conf(*SMALL, f"data.root={data}"), out)
        assert not (out / "config.json").exists()  # refused before writing anything
        with pytest.raises(Stop):
            run(conf(*SMALL, f"data.root={data}", "learner.lock_timeout=0"), out)


def placement_of(trainer: L.Trainer) -> tuple[str, int, str, str]:
    """What a Trainer runs on: its strategy's class, process count, launcher and accelerator."""
    strategy = trainer.strategy
    return (type(strategy).__name__, getattr(strategy, "num_processes", 1), type(strategy.launcher).__name__,
            type(strategy.accelerator).__name__)


@pytest.mark.parametrize(("spellings", "expected"), [
    ([["trainer=cpu"], ["trainer=default", "trainer.accelerator=cpu"], ["learner.strategy=single"],
      ["learner.strategy=multi"], ["learner.strategy=multi_sharded"]],
     ("SingleDeviceStrategy", 1, "NoneType", "CPUAccelerator")),
    ([["trainer=ddp", "trainer.devices=1"], ["learner.strategy=ddp"]],
     ("DDPStrategy", 1, "_SubprocessScriptLauncher", "CPUAccelerator")),
    ([["trainer=ddp"], ["trainer=cpu", "trainer.devices=2"], ["learner.strategy=multi", "trainer.devices=2"],
      ["learner.strategy=ddp", "trainer.devices=2"]],
     ("DDPStrategy", 2, "_SubprocessScriptLauncher", "CPUAccelerator")),
    ([["trainer=fsdp"], ["learner.strategy=multi_sharded", "trainer.devices=2"]],
     ("ShardedStrategy", 2, "_SubprocessScriptLauncher", "CPUAccelerator")),
], ids=["one-device", "ddp-one-process", "ddp-two-processes", "sharded-two-processes"])
def test_burns_strategy_spellings_and_the_trainer_groups_resolve_to_one_lightning_placement(
        conf, data, tmp_path, built, spellings, expected):
    """Each group of spellings is one Lightning configuration: the journeys
    (tests/journeys/test_resume_anywhere.py) run one of each and so cover them all."""
    for i, spelling in enumerate(spellings):
        with pytest.raises(Stop):
            run(conf(*SMALL, f"data.root={data}", "trainer.accelerator=cpu", "learner.checkpointing=true", *spelling),
                tmp_path / str(i))
        assert placement_of(built["tracker_trainer"]) == expected, spelling
