"""The GPU work of issue 10, tested where CI runs it (the CPU) and, marked `cuda`, where a GPU is.

Default device auto (compose), the device-resident loader (same batches as the host loader), and the
CUDA-graph fast path: its eager fallback must train exactly like the default path; on a GPU, graph
replay must match the eager step.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from toy import Batch, Classifier, blobs

from burnlike.data import DataLoaderBuilder, DeviceDataLoader
from burnlike.optim import AdamConfig, GradientClippingConfig, StepLrSchedulerConfig
from burnlike.train import LearnerBuilder
from burnlike.train.metric import AccuracyMetric, LossMetric

ROOT = Path(__file__).resolve().parents[1]
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


class ToyBatcher:
    """Stacks `(x, y)` items, as a Burn batcher does; takes the whole list in one call."""

    def batch(self, items: list[tuple[torch.Tensor, torch.Tensor]], device: object = None) -> Batch:
        xs, ys = zip(*items)
        return Batch(torch.stack(xs) * 2.0 - 1.0, torch.stack(ys))


# --- default device -----------------------------------------------------------------------------------
def compose_app(overrides: list[str]):
    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            return compose("config", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def test_the_guide_command_composes_to_the_auto_device_and_trainer_cpu_forces_the_cpu():
    cfg = compose_app(["model=mnist", "trainer.devices=1"])
    assert cfg.trainer.accelerator == "auto" and cfg.trainer.devices == 1
    assert cfg.learner.cuda_graph is False
    assert compose_app(["trainer=cpu"]).trainer.accelerator == "cpu"
    assert compose_app(["learner.cuda_graph=true"]).learner.cuda_graph is True


def test_the_builder_without_devices_asks_lightning_for_one_auto_device(tmp_path):
    trainer = LearnerBuilder(tmp_path).progress_bar(False).build(Classifier(), AdamConfig(), 1e-3).trainer
    expected = "CUDAAccelerator" if torch.cuda.is_available() else "CPUAccelerator"
    assert type(trainer.accelerator).__name__ == expected and trainer.num_devices == 1


# --- device-resident loader ---------------------------------------------------------------------------
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("seed", [None, 7])
def test_device_loader_gives_the_host_batches_epoch_after_epoch(seed, drop_last):
    data = blobs(100, seed=1)

    def builder() -> DataLoaderBuilder[Batch]:
        b = DataLoaderBuilder(ToyBatcher()).batch_size(32).drop_last(drop_last)
        return b.shuffle(seed) if seed is not None else b

    host, device = builder().build(data), builder().on_device("cpu").build(data)
    assert isinstance(device, DeviceDataLoader) and len(device) == len(host) == (3 if drop_last else 4)
    epochs = []
    for _ in range(3):
        host_batches, device_batches = list(host), list(device)
        assert len(host_batches) == len(device_batches) == len(host)
        for h, d in zip(host_batches, device_batches):
            assert torch.equal(h.x, d.x) and torch.equal(h.y, d.y)
        epochs.append(torch.cat([b.y for b in device_batches]))
    if seed is not None:  # a new order each epoch, as the host loader
        assert not torch.equal(epochs[0], epochs[1])


def test_device_loader_batches_mnist_like_the_host_loader(tmp_path):
    from idx import write_mnist_idx

    from burnlike.data import MnistBatcher, MnistDataset

    ds = MnistDataset.train(write_mnist_idx(tmp_path, n_train=70, n_test=10))
    host = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).build(ds)
    device = DataLoaderBuilder(MnistBatcher()).batch_size(16).shuffle(3).on_device("cpu").build(ds)
    for h, d in zip(host, device, strict=True):
        assert torch.equal(h.images, d.images) and torch.equal(h.targets, d.targets)


class WholeBatchMean:
    def batch(self, items: list[tuple[torch.Tensor, torch.Tensor]], device: object = None) -> torch.Tensor:
        return torch.stack([x for x, _ in items]).mean(0)  # not item by item: one row for the batch


def test_device_loader_names_a_batcher_that_does_not_batch_item_by_item():
    with pytest.raises(ValueError, match=r"item by item: WholeBatchMean.*\(4,\).*first dimension of 10"):
        DataLoaderBuilder(WholeBatchMean()).on_device("cpu").build(blobs(10))
