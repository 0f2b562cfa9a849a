"""The app's checks and its result tracker, word for word (mutants of the full app run that only
looser tests had covered)."""

from __future__ import annotations

import importlib.util
import math

import pytest

from burnlike.app.loggers import LoggerConfigError, check
from burnlike.app.run import METRICS, AppConfigError, MetricTracker, sweep_direction
from burnlike.train.metric import AccuracyMetric, LearningRateMetric
from burnlike.train.metric.store import EpochEntry, MetricStore, Split


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


def test_sweep_direction_is_the_metrics_own_and_names_the_metrics_that_have_one():
    assert sweep_direction("valid/Accuracy") == "maximize" and sweep_direction("train/Loss") == "minimize"
    names = str(sorted(METRICS)).replace("[", r"\[").replace("]", r"\]")
    for key in ("valid/Nope", "train/Learning Rate"):
        with pytest.raises(AppConfigError, match=rf"^optimized_metric='{key}': not a metric with a direction \(expected "
                                                 rf"<split>/<name> with a name among {names} that has one\)$"):
            sweep_direction(key)


def test_the_tracker_writes_on_its_own_splits_epochs_only_and_has_no_best_before_one(tmp_path):
    store = MetricStore()
    store.register([AccuracyMetric(), LearningRateMetric()])
    tracker = MetricTracker("valid/Accuracy", tmp_path / "result.json", store)
    store.add_listener(tracker)
    assert tracker.best_epoch() is None and math.isnan(tracker.best())
    store.end_epoch(Split.TRAIN, 1, {"Accuracy": EpochEntry(50.0)})  # the train split's Accuracy: not the key
    assert not (tmp_path / "result.json").exists()
    store.end_epoch(Split.VALID, 1, {"Accuracy": EpochEntry(60.0)})
    assert (tmp_path / "result.json").exists() and tracker.best() == 60.0
    with pytest.raises(AppConfigError, match=r"^optimized_metric='train/Learning Rate': the metric has no direction "
                                             r"\(higher_is_better=None\), so no epoch is best; optimize a metric such "
                                             r"as valid/Accuracy or valid/Loss$"):
        MetricTracker("train/Learning Rate", tmp_path / "lr.json", store)


def test_validate_takes_a_train_metric_and_lists_the_logged_ones_otherwise(conf):
    from burnlike.app.run import validate

    validate(conf("optimized_metric=train/Loss"))
    with pytest.raises(AppConfigError, match=r"^optimized_metric='valid/Nope' is not logged by this run: expected one "
                                             r"of \['train/Accuracy', 'train/Loss', 'valid/Accuracy', 'valid/Loss'\] "
                                             r"\(learner.metrics decides what is logged\)$"):
        validate(conf("optimized_metric=valid/Nope"))


def test_resume_points_fast_path_devices_and_execution_checks(conf):
    import torch

    from burnlike.app.data import fast_path_data_device
    from burnlike.app.run import _resume_point, check_devices, execution

    assert _resume_point("last") == "last" and _resume_point(" 3 ") == 3
    assert _resume_point("LAST") is None and _resume_point("0") is None
    on = conf("learner.cuda_graph=true", "trainer.accelerator=cuda")
    assert fast_path_data_device(on, cuda=True) == "cuda:0"
    assert fast_path_data_device(on) == ("cuda:0" if torch.cuda.is_available() else None)  # torch is asked
    if not torch.cuda.is_available():
        with pytest.raises(AppConfigError, match=r"^trainer.accelerator=cuda but torch sees no CUDA device"):
            check_devices(conf("trainer.accelerator=cuda"))
    with pytest.raises(AppConfigError, match=r"learner.strategy=single needs trainer.devices as a count or a list of "
                                             r"indices, got True"):
        execution(conf("learner.strategy=single", "trainer.devices=true"))
    multi = execution(conf("learner.strategy=multi", "trainer.accelerator=cpu", "trainer.devices=2"))
    sharded = execution(conf("learner.strategy=multi_sharded", "trainer.accelerator=cpu", "trainer.devices=2"))
    assert multi.trainer_kwargs()["strategy"] != sharded.trainer_kwargs()["strategy"] == "fsdp"
