"""Burn's optimizers (`AdamConfig().init()`), gradients and LR schedulers over `torch.optim`."""

from burnlike.optim.grads import GradientsAccumulator, GradientsParams
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
from burnlike.optim.optimizer import (
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    MomentumConfig,
    Optimizer,
    OptimizerConfig,
    SgdConfig,
    WeightDecayConfig,
)

__all__ = [
    "AdamConfig",
    "AdamWConfig",
    "ConstantLr",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrSchedulerConfig",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "LrSchedulerConfig",
    "MomentumConfig",
    "NoamLrSchedulerConfig",
    "Optimizer",
    "OptimizerConfig",
    "SgdConfig",
    "StepLrSchedulerConfig",
    "WeightDecayConfig",
]
