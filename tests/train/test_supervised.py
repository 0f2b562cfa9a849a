"""`burnlike.train.supervised`: Burn 0.20/0.21's `SupervisedTraining(dir, train, valid)…launch(
Learner(model, optim, lr))`. Burn's guide spelled the 0.18, 0.19 and 0.21 ways trains identical
weights and leaves the same artifacts; the training runs on the strategy it was given; `launch`
names what it got instead of a `Learner`, and passes the optimizer's own error through."""

from __future__ import annotations

import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy

import burnlike
from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
from burnlike.models.mnist import ModelConfig
from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import CompactRecorder
from burnlike.train import (
    DistributedConfig,
    Learner,
    LearnerBuilder,
    LearningResult,
    LearningStrategy,
    SupervisedTraining,
    TrainingResult,
    TrainingStrategy,
)
from burnlike.train.metric import AccuracyMetric, LossMetric
from tests.helpers.idx import write_mnist_idx
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import NoParameters


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    """Small MNIST-format train and test sets (IDX files)."""
    root = write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=128, n_test=64)
    return MnistDataset.train(root), MnistDataset.test(root)


def guide(mnist, artifact_dir, spelling):
    """Burn's guide `train()` (seed, loaders, metrics, file checkpointer, summary) in one spelling."""
    burnlike.seed(42)
    batches = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42).num_workers(0)
    train, test = batches.build(mnist[0]), batches.build(mnist[1])
    model, optim, lr = ModelConfig(10, 512).init("cpu"), AdamConfig().init(), 1e-4
    if spelling == "0.21":
        training = (SupervisedTraining(artifact_dir, train, test).metrics((AccuracyMetric(), LossMetric()))
                    .with_file_checkpointer(CompactRecorder()).num_epochs(1).summary().progress_bar(False))
        return training.launch(Learner(model, optim, lr))
    builder = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .with_file_checkpointer(CompactRecorder()).num_epochs(1).summary().progress_bar(False))
    if spelling == "0.18":
        builder = builder.devices(["cpu"])
    else:
        builder = builder.learning_strategy(LearningStrategy.single_device("cpu"))
    learner = builder.build(model, optim, lr)
    assert isinstance(learner, Learner)  # the 0.19 learner is a Learner(model, optim, lr) with a Trainer
    return learner.fit(train, test)


def test_guide_in_burn_0_18_0_19_and_0_21_spellings_trains_identical_weights(mnist, tmp_path):
    results = {s: guide(mnist, tmp_path / s, s) for s in ("0.18", "0.19", "0.21")}
    assert isinstance(results["0.21"], LearningResult) and isinstance(results["0.18"], TrainingResult)
    weights = {s: r.model.state_dict() for s, r in results.items()}
    for spelling in ("0.19", "0.21"):
        for name, value in weights["0.18"].items():
            assert torch.equal(value, weights[spelling][name]), (spelling, name)
    untrained = (burnlike.seed(42), ModelConfig(10, 512).init("cpu"))[1]
    assert not torch.equal(untrained.linear2.weight, results["0.18"].model.linear2.weight)
    for spelling in results:  # same Burn artifacts: logs, checkpoint, summary
        run = tmp_path / spelling
        assert (run / "checkpoint" / "model-1.mpk").exists() and (run / "experiment.log").exists()
        assert len((run / "train" / "epoch-1" / "Accuracy.log").read_text().splitlines()) == 2
        assert results[spelling].summary.get("valid", "Loss") is not None


def test_supervised_training_runs_on_the_strategy_it_was_given(tmp_path):
    torch.manual_seed(0)
    result = (SupervisedTraining(tmp_path, loader(32, 16), loader(32, 16)).metrics(LossMetric()).num_epochs(1)
              .progress_bar(False).with_application_logger(False)
              .with_training_strategy(TrainingStrategy.single_device("cpu"))
              .launch(Learner(Classifier(), AdamConfig(), 1e-2)))
    trainer = result.trainer
    assert type(trainer.accelerator).__name__ == "CPUAccelerator" and trainer.num_devices == 1
    assert trainer.global_step == 2 and (tmp_path / "valid" / "epoch-1" / "Loss.log").exists()


def test_supervised_training_hands_a_ddp_strategy_to_the_trainer(tmp_path):
    """Built, not launched: no processes start."""
    ddp = TrainingStrategy.ddp(["cpu", "cpu"], DistributedConfig(num_nodes=1))
    training = SupervisedTraining(tmp_path, loader(32), loader(32)).metrics(LossMetric()).progress_bar(False)
    assert training.with_training_strategy(ddp) is training
    trainer = training.build(Classifier(), AdamConfig(), 1e-2).trainer
    assert isinstance(trainer.strategy, DDPStrategy) and trainer.num_devices == 2 and trainer.num_nodes == 1
    with pytest.raises(TypeError, match="device strategy"):
        training.with_training_strategy("ddp")


def test_launch_names_what_it_got_instead_of_a_learner(tmp_path):
    with pytest.raises(TypeError, match=r"^launch expects Learner\(model, optim, lr\), got Classifier$"):
        SupervisedTraining(tmp_path, loader(32, 16)).launch(Classifier())


def test_launch_of_a_model_without_parameters_gets_the_optimizers_error(tmp_path):
    with pytest.raises(ValueError, match="empty parameter list"):
        SupervisedTraining(tmp_path, loader(16, 16)).progress_bar(False).with_application_logger(False)\
            .launch(Learner(NoParameters(), SgdConfig(), 0.1))
