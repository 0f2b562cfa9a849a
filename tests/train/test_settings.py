"""`LearnerSettings`: the builder's options as one frozen value, and the Lightning-only ones named
once (what `TrainingStrategy.Custom` refuses)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from lightning.pytorch.callbacks import Callback

from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric
from burnlike.train.settings import LearnerSettings


def test_the_setters_fill_the_settings_and_leave_earlier_values_alone(tmp_path):
    builder = LearnerBuilder(tmp_path)
    before = builder.settings
    builder.num_epochs(3).metric_valid_numeric(AccuracyMetric()).trainer_kwargs(precision="bf16-mixed")
    builder.trainer_kwargs(limit_val_batches=2)
    assert before == LearnerSettings(tmp_path)
    settings = builder.settings
    assert (settings.num_epochs, settings.numeric, dict(settings.trainer_kwargs)) == (
        3, {"train": [], "valid": ["Accuracy"]}, {"precision": "bf16-mixed", "limit_val_batches": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.num_epochs = 4  # type: ignore[misc]


def test_only_the_lightning_only_options_set_are_listed():
    settings = LearnerSettings(Path("run"), num_epochs=5, summary=True)
    assert settings.lightning_only_set() == []
    settings = dataclasses.replace(settings, callbacks=(Callback(),), async_checkpoints=True,
                                   trainer_kwargs={"precision": 16})
    assert settings.lightning_only_set() == ["trainer_kwargs(...)", "callback(...)", "async_checkpoints()"]
