"""`StepModule`: the one generic LightningModule, wrapping any model with Burn's step traits.

It hands the loss of `backward(loss)` to Lightning's automatic optimization, so AMP, clipping and
DDP/FSDP keep working, and feeds Burn metrics without a host sync per step. Burn's gradient
accumulation (the n gradients summed, the LR scheduler stepped every batch) and the CUDA-graph fast
path run the step in Lightning's manual optimization instead (`graph_step.ManualStep`). Its
`store` (Burn's metric store) is the run's one record of epoch values. Usable alone in a user's own
`lightning.Trainer`.
"""

from __future__ import annotations

import dataclasses
import logging
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from lightning.pytorch.utilities.types import OptimizerLRScheduler
from torch import nn

from burnlike._lightning import attached_trainer
from burnlike.autodiff import Gradients
from burnlike.checks import positive_int
from burnlike.optim.lbfgs import LBFGSConfig
from burnlike.optim.lr_scheduler import LrScheduler
from burnlike.optim.optimizer import Optimizer, OptimizerConfig, TorchOptimizerFactory, as_optimizer
from burnlike.record.checkpoint.protocol import EpochCheckpoint
from burnlike.record.checkpoint.weights import load_weights
from burnlike.train.components import LrOrScheduler
from burnlike.train.graph_step import CudaGraphConfig, GraphStep, ManualStep, StepHost, host_lr
from burnlike.train.metric.base import Metric, MetricContext
from burnlike.train.metric.store import EpochEntry, MetricStore, Split
from burnlike.train.output import NONE, Adaptor
from burnlike.train.quiet import ignore_not_resumable, quiet_lightning
from burnlike.train.sharded import ShardedStrategy, shard_model
from burnlike.train.step import (
    InferenceStep,
    TrainOutput,
    TrainStep,
    ValidStep,
    implements,
    inference_fn,
    missing_step,
)

log = logging.getLogger("burnlike.train")


_PLAIN_ATTRS = frozenset({"_current_fx_name", "_metered"})


class MetricInputError(TypeError):
    """A registered metric needs an input the model's output item cannot provide."""


def output_type(model: nn.Module, trait: type) -> type | None:
    """The output item type declared by `TrainStep[B, O]`/`ValidStep[B, O]`/`InferenceStep[B, O]`, or the
    step method's return hint (the Python form of Burn 0.20's associated `Output` type)."""
    for klass in type(model).__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if typing.get_origin(base) is trait:
                args = typing.get_args(base)
                if len(args) == 2 and isinstance(args[1], type):
                    return args[1]
    methods: dict[type, str] = {TrainStep: "train_step", ValidStep: "valid_step", InferenceStep: "inference_step"}
    method = methods[trait]
    try:
        ret = typing.get_type_hints(getattr(type(model), method)).get("return")
    except Exception:
        return None
    if trait is TrainStep and typing.get_origin(ret) is TrainOutput:
        ret = typing.get_args(ret)[0]
    return ret if isinstance(ret, type) else None


def check_metrics(item_type: type, metrics: Iterable[Metric], split: str) -> None:
    provides = getattr(item_type, "provides", frozenset({NONE}))
    for m in metrics:
        if m.input not in provides:
            feeders = outputs_providing(m.input)
            suggestion = (f"Return an output type that can feed it ({' or '.join(feeders)})" if feeders
                          else "Return an output type whose `provides` lists it")
            raise MetricInputError(
                f"{split} metric {m.name!r} ({type(m).__name__}) needs a '{m.input}' input, but the "
                f"{split} step returns {item_type.__name__}, which provides {sorted(provides)}. "
                f"{suggestion} or drop the metric."
            )


def outputs_providing(kind: str) -> list[str]:
    """The names of burnlike's output types (Burn's `Adaptor`s) that feed a metric input `kind`."""
    found: list[str] = []
    pending = list(Adaptor.__subclasses__())
    while pending:
        cls = pending.pop(0)
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("burnlike.") and kind in cls.provides and cls.__name__ not in found:
            found.append(cls.__name__)
    return found


class StepModule(StepHost):
    """Wrap `model` (implementing `train_step`/`valid_step`) for a `lightning.Trainer`.

    Registering a metric the output can't feed fails here when the model declares its output type
    (`TrainStep[B, O]` or a return hint), else at the first step.

    Args:
        model: The model: `train_step`, and `valid_step` or `inference_step`.
        optimizer: A burnlike optimizer or config (`AdamConfig()`), or `callable(params, lr=...)`.
        lr_or_scheduler: A float (constant) or a Burn LR scheduler config/instance.
        train_metrics: The metrics of the training steps.
        valid_metrics: The metrics of the validation steps (separate instances from the train ones).
        cuda_graph: The fast path (burnlike.train.graph_step): manual optimization, the step
            captured in CUDA graphs and replayed, with the same accumulation (the Trainer's
            `accumulate_grad_batches` and `gradient_clip_val` are for automatic optimization only).
        grads_accumulation: Burn's (`LearnerBuilder.grads_accumulation(n)`): the optimizer steps on
            the sum of every n batches' gradients, the LR scheduler steps every batch and a group the
            epoch ends in is dropped (burn-train `supervised/strategies/single/epoch.rs`); n > 1 runs
            the step in Lightning's manual optimization (`graph_step.ManualStep`). Lightning's own
            `Trainer(accumulate_grad_batches=n)`, with the default 1 here, averages instead and steps
            the scheduler per optimizer step.

    Attributes:
        model: The wrapped model.
        optim: The initialised optimizer.
        lr_or_scheduler: The learning rate or scheduler as given.
        train_metrics: The train metrics (registered: they follow the module across devices).
        valid_metrics: The valid metrics.
        store: The run's metric store: every epoch's value of every metric.
        graph_step: The CUDA-graph step (None: eager).
        manual_step: The step under manual optimization, graph or accumulation (None: automatic).
        automatic_optimization: Lightning's switch: False when `manual_step` runs the step.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: Optimizer | OptimizerConfig | TorchOptimizerFactory,
        lr_or_scheduler: LrOrScheduler = 1e-3,
        train_metrics: Sequence[Metric] = (),
        valid_metrics: Sequence[Metric] = (),
        cuda_graph: CudaGraphConfig | None = None,
        grads_accumulation: int = 1,
    ) -> None:
        super().__init__()
        positive_int(grads_accumulation, "grads_accumulation")
        if not implements(model, "train_step"):
            raise missing_step(model, "train_step")
        self._valid_name = inference_fn(model).__name__  # valid_step (ValidStep) or inference_step (InferenceStep)
        self.model = model
        self.optim = as_optimizer(optimizer)
        self.lr_or_scheduler = lr_or_scheduler
        # Separate instances per split, as Burn registers train and valid metrics separately.
        train = distinct_metrics(train_metrics)
        valid = distinct_metrics(valid_metrics, exclude=train)
        self._metrics = {"train": train, "valid": valid}
        self.train_metrics = nn.ModuleList(train)  # registered: they follow the module across devices
        self.valid_metrics = nn.ModuleList(valid)
        self.store = MetricStore()
        self.store.register([*train, *valid])
        self._checked: set[str] = set()
        self.check_output("train", output_type(model, TrainStep))
        self.check_output("valid", output_type(model, ValidStep) or output_type(model, InferenceStep))
        self._finished: set[tuple[str, int]] = set()
        self._needs_lr = any(m.input == NONE for m in self.train_metrics)
        self._ctx = MetricContext()
        self._metered: tuple[int, int] | None = None  # (epoch, batch) whose train step fed the metrics
        if cuda_graph is not None and grads_accumulation > 1 and cuda_graph.grads_accumulation == 1:
            cuda_graph = dataclasses.replace(cuda_graph, grads_accumulation=grads_accumulation)
        if isinstance(getattr(self.optim, "spec", None), LBFGSConfig) and max(
                grads_accumulation, cuda_graph.grads_accumulation if cuda_graph is not None else 1) > 1:
            raise TypeError("grads_accumulation(n) with L-BFGS: its step re-runs the batch through a closure, so it "
                            "has no gradients of several batches to step on; use grads_accumulation(1)")
        self.graph_step = GraphStep(self, cuda_graph) if cuda_graph is not None else None
        self.manual_step: ManualStep | None = self.graph_step or (
            ManualStep(self, grads_accumulation) if grads_accumulation > 1 else None)
        if self.manual_step is not None:
            self.automatic_optimization = False

    def __setattr__(self, name: str, value: Any) -> None:
        # Lightning sets `_current_fx_name` around every hook call (dozens per step); skip
        # nn.Module's parameter/buffer/submodule bookkeeping for these plain attributes.
        if name in _PLAIN_ATTRS:
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The model's forward."""
        return self.model(*args, **kwargs)

    # Steps -------------------------------------------------------------------------------------
    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        """Lightning's step: the model's `train_step`, its item fed to the train metrics, its loss
        returned for Lightning's backward (or the manual step, which does its own).

        Args:
            batch: The batch.
            batch_idx: Its index in the epoch.
        """
        if self.manual_step is not None:
            return self.manual_step.step(batch, batch_idx)
        out = self.train_output(batch)
        # A closure optimizer (L-BFGS) runs the step several times per batch: count the batch once.
        first_eval = self._metered != (self.current_epoch, batch_idx)
        self._metered = (self.current_epoch, batch_idx)
        if first_eval:
            self.update_train_metrics(out.item)
        return out.grads.loss

    def train_output(self, batch: Any) -> TrainOutput[Any]:
        """The model's `train_step(batch)`, checked: a `TrainOutput` holding `backward(loss)`.

        Args:
            batch: The batch.

        Raises:
            TypeError: The step returns something else.
        """
        out = self.model.train_step(batch)  # type: ignore[operator]  # nn.Module attribute typing
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
        self.check_output("train", type(out.item))
        return out

    def update_train_metrics(self, item: Any, metrics: Sequence[Metric] | None = None) -> None:
        """Feed `item` to the train metrics (or to `metrics`), with the iteration and lr they may need.

        Args:
            item: The step's output item.
            metrics: The metrics to feed (None: every train metric).
        """
        targets: Sequence[Metric] = self.metrics("train") if metrics is None else metrics
        if not targets:
            return
        ctx = self._ctx
        if self._needs_lr:
            ctx.iteration = self.global_step
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            # the fast path's lr is a device tensor its scheduler updates in place: a copy, not a sync
            # (MetricContext.lr says float; a 0-dim tensor is a Number to the metric history too)
            ctx.lr = lr.detach().clone() if isinstance(lr, torch.Tensor) else lr  # type: ignore[assignment]
        for m in targets:
            m.update(item, ctx)

    def metric_context(self) -> MetricContext:
        """The context the metrics get with each item (iteration, learning rate)."""
        return self._ctx

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        """Lightning's step: the model's `valid_step` (or `inference_step`), fed to the valid metrics.

        Args:
            batch: The batch.
            batch_idx: Its index in the epoch.
        """
        item = getattr(self.model, self._valid_name)(batch)
        if self.trainer.sanity_checking:
            return
        self.check_output("valid", type(item))
        for m in self.metrics("valid"):
            m.update(item, self._ctx)

    def metrics(self, split: str) -> list[Metric]:
        """The metrics registered for `split`.

        Args:
            split: "train" or "valid".
        """
        return self._metrics[split]

    def check_output(self, split: str, item_type: type | None) -> None:
        """Check `split`'s metrics against its output type once: from the model's declared type at
        construction, else from the first step's item (untyped models).

        Args:
            split: "train" or "valid".
            item_type: The output item's type (None: not known yet).

        Raises:
            MetricInputError: A metric needs an input the item can't provide.
        """
        if item_type is None or split in self._checked:
            return
        check_metrics(item_type, self.metrics(split), split)
        self._checked.add(split)

    exact_resume = False
    """Set by `Learner.fit`: this fit's train loader continues exactly where it stopped."""

    def setup(self, stage: str) -> None:
        """Quiet Lightning's warnings in every process (and its resumability one when the resume is exact).

        Args:
            stage: Lightning's stage ("fit", "validate" ...).
        """
        quiet_lightning()  # in every process: ddp_spawn's don't inherit the warning filters
        if self.exact_resume:
            ignore_not_resumable()

    def configure_model(self) -> None:
        """Under `ShardedStrategy`, shard the model over the processes (FSDP2), once."""
        trainer = attached_trainer(self)  # None: built outside a fit (load_from_checkpoint): nothing to shard
        strategy = trainer.strategy if trainer is not None else None
        if isinstance(strategy, ShardedStrategy) and not getattr(self, "_sharded", False):
            shard_model(self.model, strategy.data_parallel_mesh())
            self._sharded = True

    def on_train_start(self) -> None:
        """A new fit captures its CUDA graphs afresh."""
        if self.graph_step is not None:
            self.graph_step.reset()

    def on_validation_model_zero_grad(self) -> None:
        """Lightning's gradient reset before a validation, skipped inside an accumulation group."""
        # Lightning frees the gradients before a validation; a validation inside an accumulation
        # group (val_check_interval) must not drop the group's gradients so far
        if self.manual_step is not None and self.manual_step.pending:
            return
        super().on_validation_model_zero_grad()

    # Epoch ends --------------------------------------------------------------------------------
    def on_validation_epoch_start(self) -> None:
        """The validation at a train epoch's end runs before that epoch ends: its train values are
        complete, so they are stored first, as Burn logs them (train, then valid)."""
        trainer = self.trainer
        if trainer.sanity_checking or trainer.state.fn != "fit":
            return
        batches = trainer.fit_loop.epoch_loop.batch_progress
        if batches.is_last_batch or batches.current.ready >= trainer.num_training_batches:
            self.finish_epoch("train")

    def on_validation_epoch_end(self) -> None:
        """The validation epoch's values go to the store."""
        if not self.trainer.sanity_checking:
            self.finish_epoch("valid")

    def on_train_epoch_end(self) -> None:
        """The train epoch's values go to the store (unless a validation stored them already)."""
        self.finish_epoch("train")

    def finish_epoch(self, split: str) -> None:
        """Aggregate (synced) into the store, once per epoch; Lightning's log gets `split/Name` too,
        for Lightning's callbacks (the loggers get the store's values from `MetricLoggerBridge`, at
        step = the epoch).

        Args:
            split: "train" or "valid".
        """
        epoch = self.current_epoch + 1
        if (split, epoch) in self._finished or self.store.has_epoch(Split(split), epoch):
            return  # (stored before a resume: a checkpoint taken during the epoch's validation)
        self._finished.add((split, epoch))
        entries = {m.name: EpochEntry(*m.finish_epoch()) for m in self.metrics(split)}
        for name, entry in entries.items():
            self.log(f"{split}/{name}", entry.value, on_step=False, on_epoch=True, sync_dist=False, logger=False)
        if entries:
            log.info("epoch %d %s: %s", epoch, split, ", ".join(f"{k}={e.value:.4g}" for k, e in entries.items()))
        self.store.end_epoch(Split(split), epoch, entries)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """The metric store and the train epoch's steps so far go into the checkpoint.

        Args:
            checkpoint: Lightning's checkpoint dict.
        """
        EpochCheckpoint(metric_store=self.store.state_dict(), epoch_history=self._train_history()).add_to(checkpoint)
        if self.graph_step is not None:
            host_lr(checkpoint)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """The metric store (and a mid-epoch checkpoint's steps) come back; Burn's per-epoch layout
        loads the weights from the epoch's module record.

        Args:
            checkpoint: Lightning's checkpoint dict.
        """
        saved = EpochCheckpoint.from_dict(checkpoint)
        self.store.load_state_dict(saved.metric_store or {})
        if saved.batches_done:  # a mid-epoch checkpoint: the epoch's steps so far count too
            self._restore_train_history(saved.epoch_history or {})
        model_file = EpochCheckpoint.take_model_file(checkpoint)
        if model_file is not None:  # Burn's per-epoch layout: the weights are a module record
            load_weights(self.model, model_file)
            checkpoint["state_dict"] = self.state_dict()

    def _train_history(self) -> dict[str, Any]:
        """Every rank's `(value, count)` steps of the train epoch under way, by metric name: a
        checkpoint saved mid-epoch carries them, so the resumed epoch's value and log lines are the
        uninterrupted run's. Every rank saves a checkpoint together (Lightning's rule), so gathering
        them here is one collective per save, of a few floats per step."""
        mine = {m.name: [list(pair) for pair in m.host_history()] for m in self.metrics("train")}
        ranks = [mine]
        if self.trainer.world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
            ranks = [{} for _ in range(self.trainer.world_size)]
            torch.distributed.all_gather_object(ranks, mine)
        return {"ranks": ranks}

    def _restore_train_history(self, saved: Mapping[str, Any]) -> None:
        """This rank's saved steps; resumed at another world size, rank 0 takes them all (the epoch's
        value is the same; its log lines then hold every old rank's steps)."""
        ranks = list(saved.get("ranks", []))
        world, rank = self.trainer.world_size, self.trainer.global_rank
        if len(ranks) == world:
            mine = [ranks[rank]]
        else:
            mine = ranks if rank == 0 else []
        for m in self.metrics("train"):
            m.restore_history([(float(v), float(c)) for part in mine for v, c in part.get(m.name, [])])

    # Optimization ------------------------------------------------------------------------------
    def configure_optimizers(self) -> OptimizerLRScheduler:
        """The torch optimizer, with the Burn schedule as a per-step `LambdaLR` over a base lr of 1.

        Raises:
            TypeError: `lr_or_scheduler` is neither a float nor a Burn scheduler.
        """
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
        """The optimizer config's Burn clipping, then Lightning's `gradient_clip_val`.

        Args:
            optimizer: The torch optimizer.
            gradient_clip_val: The Trainer's clipping value (None: none).
            gradient_clip_algorithm: The Trainer's clipping algorithm ("norm" or "value").
        """
        self.clip_gradients_burn(optimizer)
        self.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """Under manual optimization, the Burn clipping (Lightning doesn't call `configure_gradient_clipping` there).

        Args:
            optimizer: The torch optimizer.
        """
        # Manual optimization (the fast path's eager steps): Lightning calls this after unscaling
        # fp16 gradients and doesn't call configure_gradient_clipping.
        if not self.automatic_optimization:
            self.clip_gradients_burn(optimizer)

    def clip_gradients_burn(self, optimizer: torch.optim.Optimizer) -> None:
        """The optimizer config's Burn clipping: each parameter tensor on its own.

        Args:
            optimizer: The torch optimizer whose parameters' gradients to clip.
        """
        clipping = self.optim.grad_clipping
        if clipping is not None:
            clipping.clip(p for group in optimizer.param_groups for p in group["params"])


def distinct_metrics(metrics: Sequence[Metric], exclude: Iterable[Metric] = ()) -> list[Metric]:
    """`metrics`, each a separate instance (a clone where one is also in `exclude` or repeated): Burn
    registers each split's metrics separately."""
    seen = {id(m) for m in exclude}
    out = []
    for m in metrics:
        if not isinstance(m, Metric):
            raise TypeError(f"expected a burnlike Metric (e.g. AccuracyMetric()), got {type(m).__name__}")
        out.append(m.clone() if id(m) in seen else m)
        seen.add(id(out[-1]))
    return out
