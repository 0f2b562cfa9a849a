"""The CUDA-graph fast path of `StepModule` (`LearnerBuilder.cuda_graph()`).

A small model on a fast GPU is bound by the host launching kernels, not by the GPU: the guide
model's step keeps the GPU busy for a sixth of the time eager PyTorch takes to launch it. Here the
whole training step — forward, loss, backward, the metrics' batch values, gradient clipping and the optimizer step — is
captured once in CUDA graphs and replayed for every batch of the same shapes, one launch each,
inside Lightning's manual optimization (so checkpoints, callbacks, early stopping, resume and logs
keep working; callbacks' hooks inside the step, such as `on_after_backward`, run on eager steps
only, and a capture that finds them overridden says so).

Two graphs, sharing one memory pool: forward + backward (gradients accumulate in place), and
clip + optimizer step + zero the gradients; the second replays on accumulation boundaries only, so
gradient accumulation needs nothing more. Accumulation is Burn's, as on the eager path (`ManualStep`):
the k gradients summed, a short group at the epoch's end dropped, the LR scheduler stepped every batch. The optimizer runs in its capturable mode with the
learning rate as a device tensor, which torch's LR schedulers update in place (`fill_`). Dropout
draws from the default CUDA generator, which torch registers with every capture (graph-safe
Philox offsets); other CUDA generators the step uses are passed as `generators`. bf16 autocast is
captured with the autocast cache off, as torch requires.

What can't be captured runs eagerly, with one warning that says why: no CUDA device, the model not
on one, several processes (DDP), fp16 (its gradient scaler syncs with the host), an optimizer without
a capturable mode, or a capture that fails (a host sync in the step). Batches of another shape than
the captured one (the short last batch) run eagerly too; `drop_last` avoids them.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import lightning as L
import torch
from lightning.pytorch import Callback
from torch import Tensor

from burnlike._lightning import optimizer_step_hooks
from burnlike.data.tensor_tree import map_tensors, tensors
from burnlike.train.output import NONE

if TYPE_CHECKING:  # pragma: no cover
    from burnlike.train.metric.base import Metric, MetricContext
    from burnlike.train.step import TrainOutput

log = logging.getLogger("burnlike.train")

# Precisions whose step has no host sync: fp16's gradient scaler checks for infs on the host.
GRAPH_PRECISIONS = frozenset({"32-true", "32", "64-true", "64", "bf16-mixed", "bf16-true"})


@dataclass(frozen=True)
class CudaGraphConfig:
    """Settings of the fast path. `grads_accumulation`: Burn's (`ManualStep`: k gradients summed, the
    scheduler stepped every batch). `warmup`: eager steps (on a side stream) before the capture, so
    lazy state (optimizer moments, cuBLAS workspaces, gradients) exists and is not captured as an
    allocation. `generators`: CUDA generators the step draws from besides the default one."""

    grads_accumulation: int = 1
    warmup: int = 3
    generators: Sequence[torch.Generator] = ()


@dataclass
class _Captured:
    fwd_bwd: torch.cuda.CUDAGraph
    optimizer: torch.cuda.CUDAGraph
    inputs: list[Tensor]
    signature: tuple[Any, ...]
    loss: Tensor
    item: Any
    values: list[tuple[Metric, Any, Any]]  # (metric, batch value, count) computed in the graph
    grads: list[tuple[Tensor, Tensor]]  # (parameter, the gradient tensor the graphs read and write)


class StepHost(L.LightningModule, ABC):
    """The LightningModule the fast path runs in, as the fast path sees it (`StepModule` is the
    one): declared here, so that this module needn't import the module that imports it."""

    @abstractmethod
    def train_output(self, batch: Any) -> TrainOutput[Any]: ...

    @abstractmethod
    def update_train_metrics(self, item: Any, metrics: Sequence[Metric] | None = None) -> None: ...

    @abstractmethod
    def metrics(self, split: str) -> list[Metric]: ...

    @abstractmethod
    def metric_context(self) -> MetricContext: ...

    @abstractmethod
    def clip_gradients_burn(self, optimizer: torch.optim.Optimizer) -> None: ...


class ManualStep:
    """Burn's training iteration in Lightning's manual optimization: gradient accumulation as Burn's
    (burn-train `learner/supervised/strategies/single/epoch.rs`, 0.21).

    Every batch: forward and backward (`manual_backward`, so AMP and DDP work), the metrics, then the
    LR scheduler steps (Burn's `learner.lr_step()` each iteration: batch k trains at `lr_at(k)`).
    Every `accumulation` batches the optimizer steps on the *sum* of their gradients (Burn's
    `GradientsAccumulator`; Lightning's `accumulate_grad_batches` averages them) and the gradients are
    zeroed. The gradients of a group the epoch ends in the middle of are dropped without a step, as
    Burn's accumulator is the epoch's. Under DDP the backward passes inside a group skip the
    all-reduce (`no_sync`); the group's last one reduces the sum. `trainer.global_step` counts the
    optimizer steps.
    """

    def __init__(self, module: StepHost, accumulation: int) -> None:
        self.module = module
        self.accumulation = accumulation
        self.pending = False  # gradients of an unfinished group are held (kept across a validation)

    def step(self, batch: Any, batch_idx: int) -> Tensor:
        boundary, drop = self.group_end(batch_idx)
        return self._eager(batch, boundary, drop)

    def group_end(self, batch_idx: int) -> tuple[bool, bool]:
        """(the optimizer steps after this batch, this batch ends the epoch in the middle of a group)."""
        trainer = self.module.trainer
        boundary = (batch_idx + 1) % self.accumulation == 0
        last = batch_idx + 1 >= trainer.num_training_batches or trainer.fit_loop.epoch_loop.batch_progress.is_last_batch
        return boundary, bool(last) and not boundary

    def set_to_none(self) -> bool:
        """Whether zeroing frees the gradients (the graphs keep theirs)."""
        return True

    def _eager(self, batch: Any, boundary: bool, drop: bool) -> Tensor:
        m = self.module
        out = m.train_output(batch)
        loss = out.grads.loss
        out.grads.consumed = True
        with self._no_sync(not boundary):
            m.manual_backward(loss)
        m.update_train_metrics(out.item)
        opt = m.optimizers()
        assert not isinstance(opt, list)
        if boundary:
            if isinstance(opt.optimizer, torch.optim.LBFGS):
                raise TypeError("grads_accumulation(n) with L-BFGS: its step re-runs the batch through a closure, "
                                "so it has no gradients of several batches to step on; use grads_accumulation(1)")
            opt.step()  # LightningOptimizer: counts the step; clipping runs in on_before_optimizer_step
            opt.zero_grad(set_to_none=self.set_to_none())
        elif drop:  # Burn: the epoch's accumulator ends with it
            opt.zero_grad(set_to_none=self.set_to_none())
        self.pending = not (boundary or drop)
        self._step_schedulers()
        return loss.detach()

    def _no_sync(self, block: bool) -> contextlib.AbstractContextManager[Any]:
        """DDP's `no_sync` inside a group: its last backward all-reduces the group's sum."""
        strategy = self.module.trainer.strategy
        block_sync = getattr(strategy, "block_backward_sync", None)
        if block and callable(block_sync):
            manager: contextlib.AbstractContextManager[Any] = block_sync()
            return manager
        return contextlib.nullcontext()

    def _step_schedulers(self) -> None:
        schedulers = self.module.lr_schedulers()
        for scheduler in schedulers if isinstance(schedulers, list) else [schedulers] if schedulers else []:
            if getattr(scheduler, "_step_count", 0) > 1:
                scheduler.step()  # type: ignore[call-arg]
                continue
            # Burn steps the scheduler every batch, also before a group's first optimizer step: torch's
            # warning about that order (at the scheduler's first step only) is expected here
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before")
                scheduler.step()  # type: ignore[call-arg]


class GraphStep(ManualStep):
    """The manual training step of a `StepModule` built with `cuda_graph=...`: eager, or replayed."""

    _warm: int  # eager steps run before the capture (counted from the decision to capture)

    def __init__(self, module: StepHost, config: CudaGraphConfig) -> None:
        super().__init__(module, config.grads_accumulation)
        self.config = config
        self.reason: str | None = None  # why the step runs eagerly (None: captured, or not decided yet)
        self._decided = False
        self._graph: _Captured | None = None
        self._other_shapes_noted = False

    @property
    def captured(self) -> bool:
        return self._graph is not None

    def reset(self) -> None:
        """Forget the graphs: at each fit's start, since Lightning moves the model to the CPU at the
        end of a fit, and the graphs would replay on addresses the parameters no longer have."""
        self.reason = None
        self._decided = False
        self._graph = None

    def set_to_none(self) -> bool:
        return self.reason is not None  # graphs need the gradient tensors kept

    # One training batch ------------------------------------------------------------------------
    def step(self, batch: Any, batch_idx: int) -> Tensor:
        if not self._decided:
            self._decided = True
            self.reason = self._why_eager()
            if self.reason is None:
                self._prepare_optimizer()
                self._warm = 0
            else:
                self._warn(self.reason)
        trainer = self.module.trainer
        boundary, drop = self.group_end(batch_idx)
        if self.reason is not None:
            return self._eager(batch, boundary, drop)
        graph = self._graph
        if graph is None:
            if self._warm < self.config.warmup:
                self._warm += 1
                with _side_stream():
                    return self._eager(batch, boundary, drop)
            try:
                graph = self._graph = self._capture(batch)
            except Exception as e:  # a host sync or an unsupported op in the step: eager from now on
                self.reason = f"capturing the step failed ({type(e).__name__}: {' '.join(str(e).split())[:300]})"
                self._warn(self.reason)
                return self._eager(batch, boundary, drop)
            skipped = skipped_hooks(trainer.callbacks)  # type: ignore[attr-defined]  # set by its connector
            if skipped:
                log.warning("cuda_graph: replayed steps don't call %s (hooks inside the step; eager steps still do)",
                            ", ".join(skipped))
        elif _signature(batch) != graph.signature:
            if not self._other_shapes_noted:
                self._other_shapes_noted = True
                log.info("cuda_graph: batches shaped unlike the captured one (the short last batch) run eagerly; "
                         "drop_last avoids them")
            return self._eager(batch, boundary, drop)
        return self._replay(graph, batch, boundary, drop)

    def _eager(self, batch: Any, boundary: bool, drop: bool) -> Tensor:
        if self._graph is not None:  # eager after the capture: into the graphs' gradients too
            keep_grads(self._graph.grads)
        return super()._eager(batch, boundary, drop)

    def _replay(self, graph: _Captured, batch: Any, boundary: bool, drop: bool) -> Tensor:
        keep_grads(graph.grads)
        for static, new in zip(graph.inputs, tensors(batch)):
            static.copy_(new, non_blocking=True)
        graph.fwd_bwd.replay()
        m = self.module
        for metric, value, count in graph.values:  # the graph overwrites its outputs: keep copies
            _record(metric, _copy(value), _copy(count))
        uncaptured = [metric for metric in m.metrics("train") if metric.input == NONE]
        if uncaptured:
            m.update_train_metrics(graph.item, uncaptured)
        if boundary:
            opt = m.optimizers()
            assert not isinstance(opt, list)
            # Lightning counts optimizer steps (global_step) in these hooks of its manual loop.
            before, after = optimizer_step_hooks(opt)
            before()
            graph.optimizer.replay()
            after()
        elif drop:  # the group the epoch ends in: dropped, as Burn does
            for _, grad in graph.grads:
                grad.zero_()
        self.pending = not (boundary or drop)
        self._step_schedulers()
        return graph.loss.clone()

    # Capture -----------------------------------------------------------------------------------
    def _capture(self, batch: Any) -> _Captured:
        m = self.module
        optimizer = self._optimizer()
        static_batch = map_tensors(lambda t: t.clone(), batch)
        metrics = [metric for metric in m.metrics("train") if metric.input != NONE]
        torch.cuda.synchronize()
        pool = torch.cuda.graph_pool_handle()
        fwd_bwd = self._new_graph()
        with torch.cuda.graph(fwd_bwd, pool=pool), self._autocast():
            out = m.train_output(static_batch)
            loss = out.grads.loss
            out.grads.consumed = True
            torch.autograd.backward(loss)  # Burn sums a group's gradients
            values = [(metric, *metric.batch_value(out.item, m.metric_context())) for metric in metrics]
            static_loss = loss.detach()
        step = self._new_graph()
        with torch.cuda.graph(step, pool=pool):
            m.clip_gradients_burn(optimizer)
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
        log.info("cuda_graph: training step captured (batch shapes %s)", [tuple(t.shape) for t in tensors(batch)])
        grads = [(p, p.grad) for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        # Detached, so nothing keeps the capture's autograd graph alive: its AccumulateGrad nodes
        # (one per parameter, reused while alive) would tie later eager backwards to the capture stream.
        item = map_tensors(Tensor.detach, out.item)
        values = [(metric, map_tensors(Tensor.detach, value), map_tensors(Tensor.detach, count))
                  for metric, value, count in values]
        return _Captured(fwd_bwd, step, tensors(static_batch), _signature(batch), static_loss, item, values, grads)

    def _new_graph(self) -> torch.cuda.CUDAGraph:
        graph = torch.cuda.CUDAGraph()
        for generator in self.config.generators:
            graph.register_generator_state(generator)
        return graph

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        if str(self.module.trainer.precision) == "bf16-mixed":  # the cache would hold pre-capture casts
            return torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False)
        return contextlib.nullcontext()

    # Setup ---------------------------------------------------------------------------------------
    def _why_eager(self) -> str | None:
        m = self.module
        if not torch.cuda.is_available():
            return "torch sees no CUDA device"
        if m.device.type != "cuda":
            return f"the model is on {m.device}, not a CUDA device (trainer accelerator/devices)"
        trainer = m.trainer
        if trainer.world_size > 1:
            return f"{trainer.world_size} processes (DDP/FSDP steps are not captured)"
        if str(trainer.precision) not in GRAPH_PRECISIONS:
            return f"precision={trainer.precision}: its gradient scaler syncs with the host (use bf16-mixed or 32-true)"
        optimizer = self._optimizer()
        if "capturable" not in optimizer.defaults and not optimizer.defaults.get("fused"):
            return f"{type(optimizer).__name__} has no capturable or fused mode"
        return None

    def _prepare_optimizer(self) -> None:
        """Capturable mode, step counters and the learning rate on the device."""
        optimizer = self._optimizer()
        device = self.module.device
        for group in optimizer.param_groups:
            if "capturable" in group and not group.get("fused"):
                group["capturable"] = True
            lr = group["lr"]
            if not isinstance(lr, Tensor) or lr.device != device:  # (a fit's end moves it to the CPU)
                group["lr"] = torch.tensor(float(lr), device=device)
        for state in optimizer.state.values():  # resumed from a checkpoint: counters were on the host
            if isinstance(state.get("step"), Tensor):
                state["step"] = state["step"].to(device=device, dtype=torch.float32)

    def _optimizer(self) -> torch.optim.Optimizer:
        opt = self.module.optimizers(use_pl_optimizer=False)
        if isinstance(opt, list):
            raise TypeError(f"cuda_graph: one optimizer expected, configure_optimizers returned {len(opt)}")
        return opt

    def _warn(self, reason: str) -> None:
        log.warning("cuda_graph: the training step runs eagerly: %s", reason)


def host_lr(checkpoint: dict[str, Any]) -> None:
    """Optimizer states in a checkpoint with the device-tensor lr back as floats (records and other
    optimizers expect numbers there); one sync per checkpoint, not per step."""
    for state in checkpoint.get("optimizer_states", []):
        for group in state.get("param_groups", []):
            if isinstance(group.get("lr"), Tensor):
                group["lr"] = float(group["lr"])
    for scheduler in checkpoint.get("lr_schedulers", []):
        if isinstance(scheduler.get("_last_lr"), list):
            scheduler["_last_lr"] = [float(v) if isinstance(v, Tensor) else v for v in scheduler["_last_lr"]]


# Hooks Lightning calls inside a training step: a replayed step is one graph launch and calls none.
STEP_HOOKS = ("on_before_backward", "on_after_backward", "on_before_optimizer_step", "on_before_zero_grad")


def skipped_hooks(callbacks: Sequence[Callback]) -> list[str]:
    """`Callback.hook` for each step hook that a callback overrides: what replays won't call."""
    return [f"{type(cb).__name__}.{hook}" for cb in callbacks for hook in STEP_HOOKS
            if getattr(type(cb), hook) is not getattr(Callback, hook)]


def keep_grads(grads: list[tuple[Tensor, Tensor]]) -> None:
    """Give each parameter back the gradient tensor the graphs use. A graph writes to addresses,
    not to `p.grad`: whoever drops a gradient (Lightning zeroes them with `set_to_none=True` before
    each validation) or replaces it would leave the graphs accumulating into memory no parameter
    reads, and freed. Dropped means zero; replaced values are copied in."""
    for p, grad in grads:
        if p.grad is not grad:
            if p.grad is None:
                grad.zero_()
            else:
                grad.copy_(p.grad)
            p.grad = grad


def _signature(batch: Any) -> tuple[Any, ...]:
    return tuple((t.shape, t.dtype, t.device) for t in tensors(batch))


def _record(metric: Metric, value: Any, count: Any) -> None:
    """What `Metric.update` does with the batch value it computes (here computed by the graph)."""
    metric._history.append((value, count))


def _copy(value: Any) -> Any:
    return value.clone() if isinstance(value, Tensor) else value



@contextlib.contextmanager
def _side_stream() -> Iterator[None]:
    """Warm-up steps run on a side stream, as torch asks before a capture."""
    stream = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        yield
    torch.cuda.current_stream().wait_stream(stream)
