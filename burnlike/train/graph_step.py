"""The CUDA-graph fast path of `StepModule` (`LearnerBuilder.cuda_graph()`).

A small model on a fast GPU is bound by the host launching kernels, not by the GPU: the guide
model's step is ~0.4 ms of GPU work behind ~2.4 ms of eager PyTorch. Here the whole training step —
forward, loss, backward, the metrics' batch values, gradient clipping and the optimizer step — is
captured once in CUDA graphs and replayed for every batch of the same shapes, one launch each,
inside Lightning's manual optimization (so checkpoints, callbacks, early stopping, resume and logs
keep working; callbacks' hooks inside the step, such as `on_after_backward`, run on eager steps
only, and a capture that finds them overridden says so).

Two graphs, sharing one memory pool: forward + backward (gradients accumulate in place), and
clip + optimizer step + zero the gradients; the second replays on accumulation boundaries only, so
gradient accumulation needs nothing more. The optimizer runs in its capturable mode with the
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
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import lightning as L
import torch
from lightning.pytorch import Callback
from torch import Tensor

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
    """Settings of the fast path. `warmup`: eager steps (on a side stream) before the capture, so
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


class GraphStep:
    """The manual training step of a `StepModule` built with `cuda_graph=...`: eager, or replayed."""

    def __init__(self, module: StepHost, config: CudaGraphConfig) -> None:
        self.module = module
        self.config = config
        self.reason: str | None = None  # why the step runs eagerly (None: captured, or not decided yet)
        self._decided = False
        self._warm = 0
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
        self._warm = 0
        self._graph = None

    # One training batch ------------------------------------------------------------------------
    def step(self, batch: Any, batch_idx: int) -> Tensor:
        if not self._decided:
            self._decided = True
            self.reason = self._why_eager()
            if self.reason is None:
                self._prepare_optimizer()
            else:
                self._warn(self.reason)
        k = self.config.grads_accumulation
        trainer = self.module.trainer
        # As Lightning's automatic accumulation: step every k batches and at the epoch's last batch
        last = batch_idx + 1 >= trainer.num_training_batches or trainer.fit_loop.epoch_loop.batch_progress.is_last_batch
        boundary = (batch_idx + 1) % k == 0 or bool(last)
        if self.reason is not None:
            return self._eager(batch, boundary)
        graph = self._graph
        if graph is None:
            if self._warm < self.config.warmup:
                self._warm += 1
                with _side_stream():
                    return self._eager(batch, boundary)
            try:
                graph = self._graph = self._capture(batch)
            except Exception as e:  # a host sync or an unsupported op in the step: eager from now on
                self.reason = f"capturing the step failed ({type(e).__name__}: {' '.join(str(e).split())[:300]})"
                self._warn(self.reason)
                return self._eager(batch, boundary)
            skipped = skipped_hooks(trainer.callbacks)  # type: ignore[attr-defined]  # set by its connector
            if skipped:
                log.warning("cuda_graph: replayed steps don't call %s (hooks inside the step; eager steps still do)",
                            ", ".join(skipped))
        elif _signature(batch) != graph.signature:
            if not self._other_shapes_noted:
                self._other_shapes_noted = True
                log.info("cuda_graph: batches shaped unlike the captured one (the short last batch) run eagerly; "
                         "drop_last avoids them")
            return self._eager(batch, boundary)
        return self._replay(graph, batch, boundary)

    def _eager(self, batch: Any, boundary: bool) -> Tensor:
        if self._graph is not None:  # eager after the capture: into the graphs' gradients too
            keep_grads(self._graph.grads)
        m = self.module
        out = m.train_output(batch)
        loss = out.grads.loss
        out.grads.consumed = True
        k = self.config.grads_accumulation
        m.manual_backward(loss / k if k > 1 else loss)
        m.update_train_metrics(out.item)
        if boundary:
            opt = m.optimizers()
            assert not isinstance(opt, list)
            opt.step()  # LightningOptimizer: counts the step; clipping runs in on_before_optimizer_step
            opt.zero_grad(set_to_none=self.reason is not None)  # graphs need the gradient tensors kept
            self._step_schedulers()
        return loss.detach()

    def _replay(self, graph: _Captured, batch: Any, boundary: bool) -> Tensor:
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
            before: Callable[[], None] = getattr(opt, "_on_before_step", _nothing)
            after: Callable[[], None] = getattr(opt, "_on_after_step", _nothing)
            before()
            graph.optimizer.replay()
            after()
            self._step_schedulers()
        return graph.loss.clone()

    # Capture -----------------------------------------------------------------------------------
    def _capture(self, batch: Any) -> _Captured:
        m = self.module
        optimizer = self._optimizer()
        static_batch = map_tensors(lambda t: t.clone(), batch)
        k = self.config.grads_accumulation
        metrics = [metric for metric in m.metrics("train") if metric.input != NONE]
        torch.cuda.synchronize()
        pool = torch.cuda.graph_pool_handle()
        fwd_bwd = self._new_graph()
        with torch.cuda.graph(fwd_bwd, pool=pool), self._autocast():
            out = m.train_output(static_batch)
            loss = out.grads.loss
            out.grads.consumed = True
            torch.autograd.backward(loss / k if k > 1 else loss)
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
        trainer = m.trainer
        if not torch.cuda.is_available():
            return "torch sees no CUDA device"
        if m.device.type != "cuda":
            return f"the model is on {m.device}, not a CUDA device (trainer accelerator/devices)"
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

    def _step_schedulers(self) -> None:
        schedulers = self.module.lr_schedulers()
        for scheduler in schedulers if isinstance(schedulers, list) else [schedulers] if schedulers else []:
            scheduler.step()  # type: ignore[call-arg]

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


def _nothing() -> None:
    return None


@contextlib.contextmanager
def _side_stream() -> Iterator[None]:
    """Warm-up steps run on a side stream, as torch asks before a capture."""
    stream = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        yield
    torch.cuda.current_stream().wait_stream(stream)
