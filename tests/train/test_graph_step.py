"""`burnlike.train.graph_step`: the CUDA-graph fast path of `StepModule` (`cuda_graph()`).

Without a GPU the step runs eagerly, with one warning saying why, and trains exactly as the default
path (accumulation and a loader without a length included). On a GPU the captured step replays to
the eager step's weights and epoch values, draws new dropout masks per replay, captures again in a
second fit and under bf16 autocast, and runs eagerly under fp16 saying why. The pieces: batch
signatures, copies of the graphs' outputs for the metrics, the gradient tensors handed back to the
parameters, the callbacks' step hooks that replays skip, and the optimizer's device learning rate
(prepared for capture, saved to checkpoints as a plain number)."""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings

import lightning as L
import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader, IterableDataset

import burnlike
from burnlike.data import DataLoaderBuilder
from burnlike.optim import AdamConfig
from burnlike.optim.lr_scheduler import LrScheduler
from burnlike.record import load_checkpoint
from burnlike.train import LearnerBuilder
from burnlike.train.graph_step import (
    CudaGraphConfig,
    _copy,
    _record,
    _signature,
    host_lr,
    keep_grads,
    skipped_hooks,
)
from burnlike.train.metric import AccuracyMetric, LossMetric
from burnlike.train.metric.store import Split
from burnlike.train.module import StepModule
from tests.helpers.fit import StackingBatcher, cuda, train
from tests.helpers.toy import EAGER_ON_CPU, Batch, Classifier, blobs, collate, loader


class DropoutClassifier(Classifier):
    """The toy classifier with dropout: the graph must draw new masks at every replay."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.drop(x))


def epoch_values(learner, split):
    """The store's Accuracy and Loss epoch values of `split`."""
    store = learner.module.store
    return {name: store.epochs(Split(split), name) for name in ("Accuracy", "Loss")}


class GradNorm(L.Callback):
    """A callback with a hook inside the step (`on_after_backward`), which graph replays skip."""

    def on_after_backward(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        pass


def assert_close_weights(a, b, tol=1e-4):
    """Two state dicts agree within `tol` (on the CPU, in float32)."""
    for key in a:
        assert torch.allclose(a[key].float().cpu(), b[key].float().cpu(), atol=tol, rtol=tol), key


class ReplayTwice(L.Callback):
    """At the epoch's end (before fit's teardown moves the model off the GPU), replay the captured
    forward twice on the same static batch and keep both outputs."""

    def __init__(self) -> None:
        self.outputs: list[torch.Tensor] = []

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        graph = module.graph_step._graph
        assert graph is not None
        for _ in range(2):
            graph.fwd_bwd.replay()
            self.outputs.append(graph.item.output.clone())


def fast_path_fit(tmp_path, optim=None, **trainer_kwargs):
    """One epoch of the toy classifier with `cuda_graph()` (eager here without a GPU)."""
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).cuda_graph().progress_bar(False)
               .with_application_logger(False).trainer_kwargs(**trainer_kwargs)
               .build(Classifier(), optim or AdamConfig(), 1e-2))
    learner.fit(loader(32, 16))
    return learner


def trained(tmp_path, *, fast, accumulation, n):
    """The toy classifier (seed 0) over `n` samples in batches of 16, on the fast path or not."""
    burnlike.seed(0)
    builder = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).grads_accumulation(accumulation)
               .progress_bar(False).with_application_logger(False))
    learner = (builder.cuda_graph() if fast else builder).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(n, 16))
    return learner


class Stream(IterableDataset):
    """Five batches of 16 from a loader that can't say how long it is."""

    def __iter__(self):
        yield from blobs(80)


# --- pieces of the fast path -----------------------------------------------------------------------
def test_a_batch_signature_is_every_tensors_shape_dtype_and_device():
    batch = Batch(torch.zeros(4, 3), torch.zeros(4, dtype=torch.long))
    assert _signature(batch) == ((torch.Size([4, 3]), torch.float32, torch.device("cpu")),
                                 (torch.Size([4]), torch.int64, torch.device("cpu")))
    assert _signature(batch) == _signature(Batch(torch.ones(4, 3), torch.ones(4, dtype=torch.long)))
    assert _signature(batch) != _signature(Batch(torch.zeros(2, 3), torch.zeros(2, dtype=torch.long)))  # short batch
    assert _signature(batch) != _signature(Batch(torch.zeros(4, 3, dtype=torch.float64), batch.y))


def test_a_replay_records_copies_of_the_graphs_outputs():
    metric = LossMetric()
    value, count = torch.tensor(0.5), torch.tensor(4)
    _record(metric, _copy(value), _copy(count))
    value.fill_(9.0)  # the next replay overwrites the graph's output tensors
    _record(metric, _copy(value), 2)
    assert metric.finish_epoch() == (pytest.approx((0.5 * 4 + 9.0 * 2) / 6), [(0.5, 4.0), (9.0, 2.0)])
    assert _copy(3) == 3 and _copy(value) is not value and torch.equal(_copy(value), value)


def test_each_parameter_gets_back_the_gradient_tensor_the_graphs_use():
    """Lightning drops the gradients (`set_to_none=True`) before each validation; the graphs keep
    writing to the tensors they captured, so those go back to their parameters: zeroed, or holding
    what a replacement held."""
    p, q = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2))
    gp, gq = torch.full((3,), 5.0), torch.full((2,), 7.0)
    p.grad, q.grad = gp, gq
    keep_grads([(p, gp), (q, gq)])
    assert p.grad is gp and q.grad is gq and gp.tolist() == [5.0] * 3 and gq.tolist() == [7.0] * 2
    p.grad, q.grad = None, torch.full((2,), 2.0)
    keep_grads([(p, gp), (q, gq)])
    assert p.grad is gp and gp.tolist() == [0.0] * 3
    assert q.grad is gq and gq.tolist() == [2.0] * 2


def test_a_capture_names_the_callbacks_step_hooks_that_replays_skip(tmp_path):
    learner = (LearnerBuilder(tmp_path).devices(["cpu"]).metrics(AccuracyMetric(), LossMetric()).cuda_graph()
               .build(Classifier(), AdamConfig(), 1e-2))
    assert skipped_hooks(learner.trainer.callbacks) == []  # Lightning's and burnlike's own: none
    assert skipped_hooks([*learner.trainer.callbacks, GradNorm()]) == ["GradNorm.on_after_backward"]


# --- the optimizer's learning rate and checkpoints -------------------------------------------------
def test_checkpoints_hold_the_fast_paths_device_lr_as_a_number():
    opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))], lr=1e-3)
    opt.param_groups[0]["lr"] = torch.tensor(0.25)  # as the fast path keeps it (on the GPU)
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda n: 0.5)
    checkpoint = {"optimizer_states": [opt.state_dict()], "lr_schedulers": [scheduler.state_dict()]}
    host_lr(checkpoint)
    assert checkpoint["optimizer_states"][0]["param_groups"][0]["lr"] == 0.125
    assert type(checkpoint["optimizer_states"][0]["param_groups"][0]["lr"]) is float
    assert [(type(v), v) for v in checkpoint["lr_schedulers"][0]["_last_lr"]] == [(float, 0.125)]
    assert isinstance(opt.param_groups[0]["lr"], torch.Tensor)  # the live optimizer keeps its tensor


def test_host_lr_leaves_checkpoints_without_optimizer_parts_alone():
    for checkpoint in ({}, {"optimizer_states": [{}]}, {"lr_schedulers": [{}]}):
        before = {k: list(v) for k, v in checkpoint.items()}
        host_lr(checkpoint)
        assert checkpoint == before
    checkpoint = {"optimizer_states": [{"param_groups": [{"lr": torch.tensor(0.25)}]}],
                  "lr_schedulers": [{"_last_lr": [torch.tensor(0.5), 0.125]}]}
    host_lr(checkpoint)
    assert checkpoint == {"optimizer_states": [{"param_groups": [{"lr": 0.25}]}],
                          "lr_schedulers": [{"_last_lr": [0.5, 0.125]}]}
    assert type(checkpoint["optimizer_states"][0]["param_groups"][0]["lr"]) is float


def test_the_optimizer_prepared_for_capture_saves_plain_learning_rates(tmp_path):
    learner = fast_path_fit(tmp_path)
    step = learner.module.graph_step
    assert step.reason == EAGER_ON_CPU  # eager here, but the setup is the same
    optimizer = step._optimizer()
    assert optimizer is learner.trainer.optimizers[0]
    for state in optimizer.state.values():
        state["step"] = state["step"].to(torch.float64)  # as a checkpoint from elsewhere may hold it
    step._prepare_optimizer()
    group = optimizer.param_groups[0]
    assert group["capturable"] is True
    assert isinstance(group["lr"], torch.Tensor) and group["lr"].device.type == "cpu"
    assert float(group["lr"]) == pytest.approx(1e-2)
    assert all(s["step"].dtype == torch.float32 and float(s["step"]) == 2.0 for s in optimizer.state.values())
    lr = group["lr"]
    step._prepare_optimizer()  # again: a tensor lr on the right device is kept as it is
    assert optimizer.param_groups[0]["lr"] is lr
    learner.trainer.save_checkpoint(tmp_path / "prepared.ckpt")
    saved = load_checkpoint(tmp_path / "prepared.ckpt")["optimizer_states"][0]["param_groups"][0]["lr"]
    assert type(saved) is float and saved == pytest.approx(1e-2)


def test_preparing_for_capture_keeps_a_device_lr_and_leaves_fused_optimizers_as_they_are(tmp_path):
    step = fast_path_fit(tmp_path / "adam", AdamConfig()).module.graph_step
    step._prepare_optimizer()
    lr = step._optimizer().param_groups[0]["lr"]
    step._prepare_optimizer()  # again: the lr tensor already on the model's device is kept
    assert step._optimizer().param_groups[0]["lr"] is lr
    fused = fast_path_fit(tmp_path / "fused", functools.partial(torch.optim.Adam, fused=True)).module.graph_step
    fused._prepare_optimizer()
    group = fused._optimizer().param_groups[0]
    assert group["fused"] is True and group["capturable"] is False  # fused steps need no capturable mode
    assert isinstance(group["lr"], torch.Tensor) and float(group["lr"]) == pytest.approx(1e-2)


def test_preparing_for_capture_puts_the_lr_and_step_counters_on_the_models_device(tmp_path):
    """Wherever the model is (the meta device here, standing in for a GPU): the captured optimizer
    step reads them there."""
    learner = fast_path_fit(tmp_path)
    learner.module.to("meta")
    step = learner.module.graph_step
    step._prepare_optimizer()
    optimizer = step._optimizer()
    assert optimizer.param_groups[0]["lr"].device.type == "meta"
    assert [s["step"].device.type for s in optimizer.state.values()] == ["meta", "meta"]


def test_bf16_steps_are_captured_under_cuda_autocast_without_its_cache(tmp_path):
    assert isinstance(fast_path_fit(tmp_path / "fp32").module.graph_step._autocast(), contextlib.nullcontext)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CPU-only torch warns that CUDA autocast is unavailable
        autocast = fast_path_fit(tmp_path / "bf16", precision="bf16-mixed").module.graph_step._autocast()
    assert isinstance(autocast, torch.autocast)
    assert autocast.device == "cuda" and autocast.fast_dtype == torch.bfloat16 and autocast._cache_enabled is False


# --- without a GPU: eager steps --------------------------------------------------------------------
def test_fast_path_without_a_gpu_runs_eagerly_with_one_warning_and_trains_as_the_default_path(tmp_path, caplog):
    default, base = train(tmp_path, fast=False)
    with caplog.at_level(logging.WARNING, logger="burnlike.train"):
        fast, learner = train(tmp_path, fast=True)
    warnings = [r.getMessage() for r in caplog.records if "cuda_graph" in r.getMessage()]
    assert len(warnings) == 1 and "runs eagerly" in warnings[0] and EAGER_ON_CPU in warnings[0], warnings
    module = learner.module
    assert isinstance(module, StepModule) and not module.automatic_optimization and not module.graph_step.captured
    # 4 batches/epoch, accumulation 3: a step after batch 3; the 4th batch's window, short at the epoch's
    # end, is dropped as Burn drops it (burn-train supervised/strategies/single/epoch.rs): 1 step per epoch
    assert learner.trainer.global_step == base.trainer.global_step == 2
    assert learner.trainer.accumulate_grad_batches == 1  # the step accumulates itself (manual optimization)
    for key in default:
        assert torch.equal(default[key], fast[key]), key  # full precision, same seed: the same weights
    assert epoch_values(learner, "train") == epoch_values(base, "train")
    assert epoch_values(learner, "valid") == epoch_values(base, "valid")


# 4 batches in windows of 2 (2 steps); 5 batches in windows of 3 (a step after the 3rd; the short
# window of the 4th and 5th is dropped at the epoch's end, as Burn's epoch.rs drops it: 1 step)
@pytest.mark.parametrize(("accumulation", "n", "steps"), [(2, 64, 2), (3, 80, 1)])
def test_the_eager_fast_path_accumulates_as_the_default_path(tmp_path, caplog, accumulation, n, steps):
    default = trained(tmp_path / "default", fast=False, accumulation=accumulation, n=n).module.model.state_dict()
    with caplog.at_level(logging.WARNING, logger="burnlike.train"):
        learner = trained(tmp_path / "fast", fast=True, accumulation=accumulation, n=n)
    assert learner.trainer.global_step == steps
    assert [r.getMessage() for r in caplog.records if "cuda_graph" in r.getMessage()] == [
        f"cuda_graph: the training step runs eagerly: {EAGER_ON_CPU}"]
    for key, value in learner.module.model.state_dict().items():
        assert torch.equal(value, default[key]), key  # the window's gradients summed, as Burn's accumulation
    # eager steps free the gradients (only captured graphs need their tensors kept)
    assert all(p.grad is None for p in learner.module.model.parameters())


def test_the_eager_fast_path_drops_the_short_window_a_loader_without_length_ends_with(tmp_path):
    burnlike.seed(0)
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).grads_accumulation(3).cuda_graph()
               .progress_bar(False).with_application_logger(False).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(DataLoader(Stream(), batch_size=16, collate_fn=collate))
    # after the 3rd batch; the short window the loader ends with is dropped (Burn's epoch.rs)
    assert learner.trainer.global_step == 1
    assert all(p.grad is None for p in learner.module.model.parameters())


# --- on a GPU: captured graphs ---------------------------------------------------------------------
@cuda
@pytest.mark.parametrize("drop_last", [False, True])
def test_graph_replay_trains_as_the_eager_step(tmp_path, drop_last):
    """Capture happens after warm-up; the short last batch (drop_last=False) runs eagerly; the LR
    schedule reaches the graph through the in-place lr tensor; accumulation and clipping in the graphs."""
    eager, base = train(tmp_path, fast=False, devices=("cuda:0",), epochs=3, n=330, drop_last=drop_last)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast, learner = train(tmp_path, fast=True, devices=("cuda:0",), epochs=3, n=330, drop_last=drop_last,
                              on_device="cuda:0")
    # The eager short batch after a capture: nothing may tie its backward to the capture's stream.
    assert not [str(w.message) for w in caught if "AccumulateGrad" in str(w.message)]
    assert learner.module.graph_step.captured and learner.module.graph_step.reason is None
    assert learner.trainer.global_step == base.trainer.global_step
    assert_close_weights(eager, fast)
    for split in ("train", "valid"):
        for name, values in epoch_values(learner, split).items():
            expected = epoch_values(base, split)[name]
            assert values.keys() == expected.keys() and all(
                values[e] == pytest.approx(expected[e], abs=1e-3) for e in values), (split, name)


class CapturedAfterEachBatch(L.Callback):
    """Whether the step's graphs exist after each training batch."""

    def __init__(self) -> None:
        self.captured: list[bool] = []

    def on_train_batch_end(self, trainer: L.Trainer, module: L.LightningModule, outputs, batch, batch_idx: int) -> None:
        self.captured.append(module.graph_step.captured)


@cuda
def test_the_step_is_captured_right_after_its_warm_up_steps(tmp_path):
    """`CudaGraphConfig.warmup` eager steps on a side stream, then the capture at the next batch."""
    seen = CapturedAfterEachBatch()
    train(tmp_path, fast=True, devices=("cuda:0",), epochs=1, n=320, drop_last=True, on_device="cuda:0",
          callbacks=[seen])
    warmup = CudaGraphConfig().warmup
    assert seen.captured[:warmup + 2] == [False] * warmup + [True, True]


@cuda
def test_graph_replay_draws_new_dropout_masks(tmp_path):
    probe = ReplayTwice()
    train(tmp_path, fast=True, devices=("cuda:0",), model=DropoutClassifier(), accumulation=1, lr=1e-2, clip=None,
          epochs=1, n=320, drop_last=True, on_device="cuda:0", callbacks=[probe])
    assert len(probe.outputs) == 2 and not torch.equal(*probe.outputs)  # a new mask per replay


@cuda
def test_a_second_fit_captures_again(tmp_path):
    """Lightning moves the model to the CPU when a fit ends: the next fit must not replay old graphs."""
    _, learner = train(tmp_path, fast=True, devices=("cuda:0",), epochs=1, n=320, drop_last=True, on_device="cuda:0")
    data = DataLoaderBuilder(StackingBatcher()).batch_size(32).drop_last(True).on_device("cuda:0").build(blobs(320))
    learner.trainer.fit_loop.max_epochs = 2
    learner.trainer.fit(learner.module, data)
    assert learner.module.graph_step.captured
    assert all(torch.isfinite(p).all() for p in learner.module.parameters())


@cuda
def test_bf16_autocast_is_captured(tmp_path):
    fast, learner = train(tmp_path, fast=True, devices=("cuda:0",), precision="bf16-mixed", epochs=1, n=320,
                          drop_last=True, on_device="cuda:0")
    assert learner.module.graph_step.captured
    eager, _ = train(tmp_path, fast=False, devices=("cuda:0",), precision="bf16-mixed", epochs=1, n=320,
                     drop_last=True)
    assert_close_weights(eager, fast, tol=2e-2)


@cuda
def test_fp16_runs_eagerly_with_the_reason(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="burnlike.train"):
        _, learner = train(tmp_path, fast=True, devices=("cuda:0",), precision="16-mixed", epochs=1)
    assert not learner.module.graph_step.captured
    assert any("precision=16-mixed" in r.getMessage() for r in caplog.records)


class SyncFlags(L.Callback):
    """Notes, at each gradient of the model's first parameter, whether DDP all-reduces that backward."""

    def __init__(self) -> None:
        self.flags: list[bool] = []

    def on_train_start(self, trainer, pl_module) -> None:
        ddp = trainer.strategy.model
        next(pl_module.parameters()).register_hook(lambda grad: self.flags.append(ddp.require_backward_grad_sync))


def test_under_ddp_only_an_accumulation_groups_last_backward_all_reduces(tmp_path, one_rank_group):
    flags = SyncFlags()
    learner = (LearnerBuilder(tmp_path).devices(["cpu"]).grads_accumulation(2).num_epochs(1).progress_bar(False)
               .with_application_logger(False).trainer_kwargs(strategy=DDPStrategy(process_group_backend="gloo"))
               .callback(flags).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(64, 16))
    assert flags.flags == [False, True, False, True]


class NoisySchedule:
    """A schedule whose every learning rate comes with the same warning."""

    def lr_at(self, k: int) -> float:
        warnings.warn("noisy schedule", UserWarning, stacklevel=1)
        return 0.1

    def init(self) -> LrScheduler:
        return LrScheduler(self.lr_at)


def test_only_the_schedulers_first_step_runs_under_burnlikes_warning_filter(tmp_path):
    """The caller's filters decide about a schedule's warnings after its first step: under "default"
    the warning shows at the schedule's construction, at its first step (inside burnlike's filter),
    once more after it (leaving a `catch_warnings` resets Python's once-per-place registry), then no
    more. Each further step under a filter of burnlike's would show it once more."""
    burnlike.seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        (LearnerBuilder(tmp_path).devices(["cpu"]).grads_accumulation(2).num_epochs(1).progress_bar(False)
         .with_application_logger(False).build(Classifier(), AdamConfig(), NoisySchedule()).fit(loader(128, 16)))
    assert sum(str(w.message) == "noisy schedule" for w in caught) == 3
