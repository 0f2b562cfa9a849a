"""Runs on the real MNIST files and on the MNIST model files Burn itself wrote (shared/data, or
BURNLIKE_DATA; each test is skipped without them): the dataset's known label counts and normalisation
constants, the guide's model learning on a real subset, Burn's model loading, classifying as Burn does
and written back byte for byte, and the CUDA fast path reaching the eager path's accuracy."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

import burnlike
from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mnist import Model, ModelConfig
from burnlike.optim import AdamConfig
from burnlike.record import BinFileRecorder, CompactRecorder
from burnlike.train import LearnerBuilder
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import AccuracyMetric
from burnlike.train.metric.store import Split
from tests.helpers.burn_mnist_model import BurnMnist
from tests.helpers.fit import cuda, metrics_builder
from tests.helpers.paths import SHARED_DATA
from tests.helpers.records import FILES, needs_burn

needs_real_mnist = pytest.mark.skipif(not (SHARED_DATA / "MNIST" / "raw").is_dir(), reason="real MNIST not present")


def read_idx(path: Path) -> np.ndarray:
    """An MNIST IDX file (gzip), parsed here so the test depends on nothing but numpy."""
    raw = gzip.decompress(path.read_bytes())
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


@needs_real_mnist
def test_real_mnist_label_counts_and_normalisation_constants():
    train, test = MnistDataset.train(SHARED_DATA), MnistDataset.test(SHARED_DATA)
    assert (len(train), len(test)) == (60000, 10000)
    assert train.labels.bincount().tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert test.labels.bincount().tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert train.labels[:5].tolist() == [5, 0, 4, 1, 9]  # the well-known first training labels
    # the normalisation constants are the training set's own mean and std
    x = MnistBatcher().batch(train.__getitems__(list(range(60000)))).images.double()
    assert x.mean().item() == pytest.approx(0.0, abs=1e-3) and x.std().item() == pytest.approx(1.0, abs=1e-3)


@needs_real_mnist
@pytest.mark.slow
def test_guide_model_learns_on_a_real_mnist_subset(tmp_path):
    """The guide's model, data pipeline, metrics and compact checkpoints together on real MNIST."""
    burnlike.seed(42)
    train = torch.utils.data.Subset(MnistDataset.train(SHARED_DATA), range(6400))
    valid = torch.utils.data.Subset(MnistDataset.test(SHARED_DATA), range(2000))
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42)
    result = (metrics_builder(tmp_path, 1).with_file_checkpointer(CompactRecorder())
              .build(ModelConfig(10, 512).init("cpu"), AdamConfig().init(), 1e-3)
              .fit(loader.build(train), loader.build(valid)))
    assert read_metric_log(tmp_path / "valid" / "epoch-1" / "Accuracy.log") > 85.0
    assert (tmp_path / "checkpoint" / "model-1.mpk").exists()
    restored = Model(10, 512, 0.5).load_file(tmp_path / "checkpoint" / "model-1.mpk", CompactRecorder())
    assert torch.allclose(restored.linear2.weight, result.model.linear2.weight, atol=1e-2)


@needs_burn
@pytest.mark.slow
def test_burn_written_mnist_model_loads_classifies_and_writes_back_byte_identical(tmp_path):
    models = {v: BurnMnist().load_file(path, BinFileRecorder()).eval() for v, path in FILES.items()}
    for a, b in zip(models["0.19.0"].state_dict().values(), models["0.21.0"].state_dict().values()):
        assert torch.equal(a, b)  # both layouts hold the same tensors
    raw = SHARED_DATA / "MNIST" / "raw"
    images = torch.from_numpy(read_idx(raw / "t10k-images-idx3-ubyte.gz").astype(np.float32))
    labels = torch.from_numpy(read_idx(raw / "t10k-labels-idx1-ubyte.gz").astype(np.int64))
    with torch.no_grad():
        logits = torch.cat([models["0.21.0"](((x / 255) - 0.1307) / 0.3081) for x in images.split(2000)])
    assert (logits.argmax(-1) == labels).sum().item() == 9942  # Burn's own accuracy: 99.42 %
    for version, model in models.items():
        out = model.save_file(tmp_path / version, BinFileRecorder(burn_version=version))
        assert out.read_bytes() == FILES[version].read_bytes(), version


@cuda
@needs_real_mnist
@pytest.mark.slow
def test_fast_path_guide_epoch_valid_accuracy_matches_the_eager_path(tmp_path):
    """The fast path (CUDA graphs, data on the device) is a speed-up only: after 1 MNIST epoch of the
    guide, its valid accuracy is within 0.3 points of the eager path's."""
    train_set, test_set = MnistDataset.train(SHARED_DATA), MnistDataset.test(SHARED_DATA)

    def accuracy(fast: bool) -> float:
        burnlike.seed(42)
        builder = (LearnerBuilder(tmp_path / str(fast)).devices(["cuda:0"]).num_epochs(1).progress_bar(False)
                   .metric_valid_numeric(AccuracyMetric()).with_application_logger(False))
        if fast:
            builder = builder.cuda_graph()
        learner = builder.build(ModelConfig(10, 512).init(), AdamConfig(), 1e-4)
        data = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42)
        if fast:
            data = data.on_device("cuda:0")
        learner.fit(data.build(train_set), DataLoaderBuilder(MnistBatcher()).batch_size(64).build(test_set))
        return learner.module.store.epochs(Split.VALID, "Accuracy")[1]

    assert abs(accuracy(True) - accuracy(False)) <= 0.3
