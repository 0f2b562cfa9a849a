"""`StepModule`: the one generic LightningModule, wrapping any model with Burn's step traits.

It hands the loss of `backward(loss)` to Lightning's automatic optimization, so AMP, gradient
accumulation, clipping and DDP/FSDP keep working, and feeds Burn metrics without a host sync per
step. Usable alone in a user's own `lightning.Trainer`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import lightning as L
import torch
from torch import nn

from burnlike.autodiff import Gradients
from burnlike.optim.lr_scheduler import LrScheduler
from burnlike.optim.optimizer import Optimizer, OptimizerConfig, as_optimizer
from burnlike.train.metric.base import Metric, MetricContext
from burnlike.train.output import NONE
from burnlike.train.step import TrainOutput, inference_fn

log = logging.getLogger("burnlike.train")

# (split, epoch, {metric name: (epoch value, [(value, count) per step])})
EpochListener = Callable[[str, int, dict[str, tuple[float, list[tuple[float, float]]]]], None]


_PLAIN_ATTRS = frozenset({"_current_fx_name", "_metered"})


class MetricInputError(TypeError):
    """A registered metric needs an input the model's output item cannot provide."""


def check_metrics(item_type: type, metrics: Iterable[Metric], split: str) -> None:
    provides = getattr(item_type, "provides", frozenset({NONE}))
    for m in metrics:
        if m.input not in provides:
            raise MetricInputError(
                f"{split} metric {m.name!r} ({type(m).__name__}) needs a '{m.input}' input, but the "
                f"{split} step returns {item_type.__name__}, which provides {sorted(provides)}. "
                f"Return an output type that can feed it (e.g. ClassificationOutput) or drop the metric."
            )


class StepModule(L.LightningModule):
    """Wrap `model` (implementing `train_step`/`valid_step`) for a `lightning.Trainer`.

    `optimizer`: a burnlike optimizer/config (`AdamConfig()`), or `callable(params, lr=...)`.
    `lr_or_scheduler`: a float (constant) or a Burn LR scheduler config/instance.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: Optimizer | OptimizerConfig | Callable[..., torch.optim.Optimizer],
        lr_or_scheduler: float | Any = 1e-3,
        train_metrics: Sequence[Metric] = (),
        valid_metrics: Sequence[Metric] = (),
    ) -> None:
        super().__init__()
        if not callable(getattr(model, "train_step", None)):
            raise TypeError(f"{type(model).__name__} must implement train_step(batch) (burnlike.train.TrainStep)")
        self._valid_name = inference_fn(model).__name__  # valid_step (ValidStep) or inference_step (InferenceStep)
        self.model = model
        self.optim = as_optimizer(optimizer)
        self.lr_or_scheduler = lr_or_scheduler
        # Separate instances per split, as Burn registers train and valid metrics separately.
        self.train_metrics = nn.ModuleList(_distinct(train_metrics))
        self.valid_metrics = nn.ModuleList(_distinct(valid_metrics, exclude=self.train_metrics))
        self.listeners: list[EpochListener] = []
        self._checked: set[str] = set()
        self._finished: set[tuple[str, int]] = set()
        self._needs_lr = any(m.input == NONE for m in self.train_metrics)
        self._ctx = MetricContext()
        self._metered: tuple[int, int] | None = None  # (epoch, batch) whose train step fed the metrics

    def __setattr__(self, name: str, value: Any) -> None:
        # Lightning sets `_current_fx_name` around every hook call (dozens per step); skip
        # nn.Module's parameter/buffer/submodule bookkeeping for these plain attributes.
        if name in _PLAIN_ATTRS:
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.model(*args, **kwargs)

    # Steps -------------------------------------------------------------------------------------
    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        out = self.model.train_step(batch)
        if not isinstance(out, TrainOutput):
            raise TypeError(
                f"{type(self.model).__name__}.train_step must return TrainOutput(model, backward(loss), item), "
                f"got {type(out).__name__}"
            )
        if not isinstance(out.grads, Gradients):
            raise TypeError(
                "TrainOutput.grads must be backward(loss) (burnlike.train.backward), got "
                f"{type(out.grads).__name__}. Don't call loss.backward() yourself: the Learner runs the "
                "backward pass so accumulation, AMP and DDP work."
            )
        if "train" not in self._checked:
            check_metrics(type(out.item), self.train_metrics, "train")
            self._checked.add("train")
        # A closure optimizer (L-BFGS) runs the step several times per batch: count the batch once.
        first_eval = self._metered != (self.current_epoch, batch_idx)
        self._metered = (self.current_epoch, batch_idx)
        if self.train_metrics and first_eval:
            ctx = self._ctx
            if self._needs_lr:
                ctx.iteration = self.global_step
                ctx.lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            for m in self.train_metrics:
                m.update(out.item, ctx)
        return out.grads.loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        item = getattr(self.model, self._valid_name)(batch)
        if self.trainer.sanity_checking:
            return
        if "valid" not in self._checked:
            check_metrics(type(item), self.valid_metrics, "valid")
            self._checked.add("valid")
        for m in self.valid_metrics:
            m.update(item, self._ctx)

    # Epoch ends --------------------------------------------------------------------------------
    def on_validation_epoch_end(self) -> None:
        if not self.trainer.sanity_checking:
            self.finish_epoch("valid")

    def on_train_epoch_end(self) -> None:
        self.finish_epoch("train")

    def finish_epoch(self, split: str) -> None:
        """Aggregate (synced), log to Lightning as `split/Name`, and notify listeners, once per epoch."""
        epoch = self.current_epoch + 1
        if (split, epoch) in self._finished:
            return
        self._finished.add((split, epoch))
        metrics = self.train_metrics if split == "train" else self.valid_metrics
        results: dict[str, tuple[float, list[tuple[float, float]]]] = {}
        for m in metrics:
            value, history = m.finish_epoch()
            results[m.name] = (value, history)
            self.log(f"{split}/{m.name}", value, on_epoch=True, sync_dist=False)
        if results:
            log.info("epoch %d %s: %s", epoch, split, ", ".join(f"{k}={v[0]:.4g}" for k, v in results.items()))
        for listener in self.listeners:
            listener(split, epoch, results)

    # Optimization ------------------------------------------------------------------------------
    def configure_optimizers(self) -> Any:
        params = [p for p in self.model.parameters() if p.requires_grad]
        spec = self.lr_or_scheduler
        if isinstance(spec, (int, float)):
            return self.optim.build(params, float(spec))
        scheduler = spec if isinstance(spec, LrScheduler) else spec.init()
        if not isinstance(scheduler, LrScheduler):
            raise TypeError(f"lr_or_scheduler must be a float or a Burn LR scheduler config, got {type(spec).__name__}")
        optimizer = self.optim.build(params, 1.0)  # LambdaLR scales this base lr by the schedule
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler.torch_scheduler(optimizer),
                                                           "interval": "step"}}

    def configure_gradient_clipping(
        self, optimizer: torch.optim.Optimizer, gradient_clip_val: float | None = None,
        gradient_clip_algorithm: str | None = None,
    ) -> None:
        clipping = self.optim.grad_clipping
        if clipping is not None:  # Burn clips each parameter tensor on its own
            clipping.clip(p for group in optimizer.param_groups for p in group["params"])
        self.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)


def _distinct(metrics: Sequence[Metric], exclude: Iterable[Metric] = ()) -> list[Metric]:
    seen = {id(m) for m in exclude}
    out = []
    for m in metrics:
        if not isinstance(m, Metric):
            raise TypeError(f"expected a burnlike Metric (e.g. AccuracyMetric()), got {type(m).__name__}")
        out.append(m.clone() if id(m) in seen else m)
        seen.add(id(out[-1]))
    return out
