"""`burnlike.app.scheduler`: the `scheduler=` options as Burn's LR scheduler configs over the run's
iterations (`optimizer.lr` the peak), checked before training; no option keeps `optimizer.lr`."""

import math

import pytest
from omegaconf import OmegaConf

from burnlike.app.run import AppConfigError, run_iterations, scheduled_lr
from burnlike.app.scheduler import CosineScheduler, WarmupCosineScheduler, learning_rate
from burnlike.optim import CosineAnnealingLrSchedulerConfig, SequentialLrSchedulerConfig
from tests.app.helpers import SMALL


def test_no_option_is_the_optimizers_constant_rate():
    assert learning_rate(None, 3e-4, 100) == 3e-4


def test_cosine_spans_the_runs_iterations_unless_told():
    assert learning_rate(CosineScheduler(min_lr=1e-5), 1e-3, 40) == CosineAnnealingLrSchedulerConfig(1e-3, 40, 1e-5)
    assert learning_rate(CosineScheduler(num_iters=7), 1e-3, 40).num_iters == 7


def test_warmup_cosine_is_nanogpts_over_the_runs_iterations():
    config = learning_rate(WarmupCosineScheduler(warmup_iters=10, min_lr=1e-4), 1e-3, 200)
    assert isinstance(config, SequentialLrSchedulerConfig)
    scheduler = config.init()
    assert scheduler.lr_at(1) == pytest.approx(1e-3 / 11) and scheduler.lr_at(11) == pytest.approx(1e-3)
    assert scheduler.lr_at(106) == pytest.approx(1e-4 + 0.5 * (1 + math.cos(math.pi * 95 / 190)) * 9e-4)
    assert scheduler.lr_at(201) == pytest.approx(1e-4) and scheduler.lr_at(500) == pytest.approx(1e-4)
    assert learning_rate(WarmupCosineScheduler(warmup_iters=10, decay_iters=50), 1e-3, 200).milestones == [10, 51]


def test_the_runs_iterations_come_from_num_iterations_or_epochs_of_batches(conf):
    loader = range(30)  # a loader of 30 batches
    assert run_iterations(conf(*SMALL, "learner.num_epochs=3"), loader) == 90
    assert run_iterations(conf(*SMALL, "learner.num_epochs=3", "learner.valid_every=4"), loader) == 12
    assert run_iterations(conf(*SMALL, "learner.num_iterations=64", "learner.valid_every=4"), loader) == 64
    assert run_iterations(conf(*SMALL, "learner.num_epochs=2", "trainer.limit_train_batches=5"), loader) == 10
    assert run_iterations(conf(*SMALL, "learner.num_epochs=2", "trainer.limit_train_batches=0.5"), loader) == 30


def test_a_schedule_the_scheduler_refuses_names_the_keys(conf):
    cfg = conf(*SMALL, "scheduler=warmup_cosine", "learner.num_iterations=50")
    with pytest.raises(AppConfigError) as e:
        scheduled_lr(cfg, range(10))
    assert str(e.value) == ("scheduler: warmup_cosine: decay_iters must be an integer > warmup_iters=100, got 50 "
                            "(optimizer.lr=0.0001, scheduler={'warmup_iters': 100, 'decay_iters': None, 'min_lr': 0.0})")
    with pytest.raises(AppConfigError, match="^scheduler: CosineAnnealingLrSchedulerConfig: initial learning rate must"):
        scheduled_lr(conf(*SMALL, "scheduler=cosine", "optimizer.lr=2.0"), range(10))


def test_the_scheduler_options_compose_from_the_schema(conf):
    cfg = conf(*SMALL, "scheduler=warmup_cosine", "scheduler.min_lr=0.5")
    assert OmegaConf.get_type(cfg.scheduler) is WarmupCosineScheduler and cfg.scheduler.min_lr == 0.5
    assert OmegaConf.get_type(conf(*SMALL, "scheduler=cosine").scheduler) is CosineScheduler
    assert conf(*SMALL).scheduler is None
