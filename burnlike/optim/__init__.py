"""Burn's optimizers (`AdamConfig().init()`), gradients and LR schedulers over `torch.optim`."""

from burnlike.optim.adagrad import AdaGradConfig
from burnlike.optim.adamw import BurnAdamW
from burnlike.optim.adan import Adan, AdanConfig
from burnlike.optim.grads import GradientsAccumulator, GradientsParams
from burnlike.optim.lbfgs import LBFGS, LBFGSConfig, LineSearchFn
from burnlike.optim.lr_composed import ComposedLrSchedulerConfig, SchedulerReduction
from burnlike.optim.lr_scheduler import (
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    LrSchedulerConfig,
    NoamLrSchedulerConfig,
    StepLrSchedulerConfig,
)
from burnlike.optim.lr_sequential import SequentialLrSchedulerConfig, warmup_cosine
from burnlike.optim.muon import AdjustLrFn, Muon, MuonConfig
from burnlike.optim.optimizer import (
    AdamConfig,
    AdamWConfig,
    BurnSgd,
    GradientClippingConfig,
    MomentumConfig,
    Optimizer,
    OptimizerConfig,
    SgdConfig,
    WeightDecayConfig,
)
from burnlike.optim.rmsprop import RmsPropConfig

__all__ = [
    "AdaGradConfig",
    "AdamConfig",
    "AdamWConfig",
    "Adan",
    "AdanConfig",
    "AdjustLrFn",
    "BurnAdamW",
    "BurnSgd",
    "ComposedLrSchedulerConfig",
    "ConstantLr",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrSchedulerConfig",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "LBFGS",
    "LBFGSConfig",
    "LineSearchFn",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "LrSchedulerConfig",
    "MomentumConfig",
    "Muon",
    "MuonConfig",
    "NoamLrSchedulerConfig",
    "Optimizer",
    "OptimizerConfig",
    "RmsPropConfig",
    "SchedulerReduction",
    "SequentialLrSchedulerConfig",
    "SgdConfig",
    "StepLrSchedulerConfig",
    "WeightDecayConfig",
    "warmup_cosine",
]
