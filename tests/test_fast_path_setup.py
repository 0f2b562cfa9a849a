"""The CUDA-graph fast path's host-side pieces, checked without a GPU: the optimizer set up for
capture (capturable mode, the learning rate as a device tensor, float32 step counters) and saved
back with plain-float learning rates, the bf16 autocast it captures under, the batch signature
that decides replay or eager, and the metric values a replay records."""

import contextlib
import warnings

import pytest
import torch
from toy import EAGER_ON_CPU, Batch, Classifier, loader

from burnlike.optim import AdamConfig
from burnlike.record import load_checkpoint
from burnlike.train import LearnerBuilder
from burnlike.train.graph_step import _copy, _record, _signature
from burnlike.train.metric import LossMetric


def fitted(tmp_path, **trainer_kwargs):
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).cuda_graph().progress_bar(False)
               .with_application_logger(False).trainer_kwargs(**trainer_kwargs)
               .build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(32, 16))
    return learner


def test_the_optimizer_prepared_for_capture_saves_plain_learning_rates(tmp_path):
    learner = fitted(tmp_path)
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


def test_bf16_steps_are_captured_under_cuda_autocast_without_its_cache(tmp_path):
    assert isinstance(fitted(tmp_path / "fp32").module.graph_step._autocast(), contextlib.nullcontext)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CPU-only torch warns that CUDA autocast is unavailable
        autocast = fitted(tmp_path / "bf16", precision="bf16-mixed").module.graph_step._autocast()
    assert isinstance(autocast, torch.autocast)
    assert autocast.device == "cuda" and autocast.fast_dtype == torch.bfloat16 and autocast._cache_enabled is False


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
