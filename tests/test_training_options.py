"""Builder, evaluator and strategy options that no training test reached: text metrics (logged, not
summarised), the evaluator's execution, Trainer arguments, text metrics and application log, Burn
0.20's `TrainingStrategy.single_device`/`ddp` and `SupervisedTraining.with_training_strategy`, and
the StepModule's forward. Each is checked on what Lightning was given or what the run wrote."""

import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy
from toy import Classifier, loader

from burnlike.optim import AdamConfig
from burnlike.train import (
    DistributedConfig,
    EvaluatorBuilder,
    Learner,
    LearnerBuilder,
    SupervisedTraining,
    TrainingStrategy,
)
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import AccuracyMetric, LossMetric, TopKAccuracyMetric


def test_text_metrics_are_logged_for_both_splits_but_left_out_of_the_summary(tmp_path, capsys):
    torch.manual_seed(0)
    accuracy = AccuracyMetric()
    learner = (LearnerBuilder(tmp_path).metrics_text((accuracy, TopKAccuracyMetric(2))).metrics(LossMetric())
               .devices(["cpu"]).num_epochs(1).summary().progress_bar(False).with_application_logger(False)
               .build(Classifier(), AdamConfig(), 1e-2))
    assert learner.numeric == {"train": ["Loss"], "valid": ["Loss"]}
    train, valid = learner.module.metrics("train"), learner.module.metrics("valid")
    assert [m.name for m in train] == ["Accuracy", "Top-K Accuracy @ TopK(2)", "Loss"] == [m.name for m in valid]
    assert train[0] is accuracy and valid[0] is not accuracy  # each split has its own instance
    result = learner.fit(loader(64, 16), loader(32, 16))
    for split in ("train", "valid"):
        for name in ("Accuracy", "Top-K_Accuracy_@_TopK(2)"):
            assert 0.0 <= read_metric_log(tmp_path / split / "epoch-1" / f"{name}.log") <= 100.0
    assert {m.name for m in result.summary.metrics} == {"Loss"}
    assert "Accuracy" not in capsys.readouterr().out
    assert not (tmp_path / "experiment.log").exists()  # with_application_logger(False)


def test_training_strategy_single_device_and_ddp_reach_the_trainer(tmp_path):
    assert TrainingStrategy.single_device("cpu").trainer_kwargs() == {"accelerator": "cpu", "devices": 1}
    assert TrainingStrategy.single_device(torch.device("cuda", 2)).trainer_kwargs() == \
        {"accelerator": "gpu", "devices": [2]}
    with pytest.raises(TypeError, match=r"single device 'cpu'.*\['cpu'\]"):
        TrainingStrategy.ddp("cpu")
    ddp = TrainingStrategy.ddp(["cpu", "cpu"], DistributedConfig(num_nodes=1))
    assert ddp.trainer_kwargs() == {"accelerator": "cpu", "devices": 2, "strategy": "ddp", "num_nodes": 1}
    gloo = TrainingStrategy.ddp(["cpu", "cpu"], DistributedConfig(process_group_backend="gloo").with_num_nodes(3))
    assert isinstance(gloo.strategy, DDPStrategy) and gloo.strategy._process_group_backend == "gloo"
    assert gloo.num_nodes == 3 and TrainingStrategy.ddp(["cpu"]).num_nodes == 1
    with pytest.raises(TypeError, match="DistributedConfig"):
        TrainingStrategy.ddp(["cpu"], {"num_nodes": 2})
    # SupervisedTraining hands the strategy to the Trainer (built, not launched: no processes)
    training = SupervisedTraining(tmp_path, loader(32), loader(32)).metrics(LossMetric()).progress_bar(False)
    assert training.with_training_strategy(ddp) is training
    trainer = training.build(Classifier(), AdamConfig(), 1e-2).trainer
    assert isinstance(trainer.strategy, DDPStrategy) and trainer.num_devices == 2 and trainer.num_nodes == 1
    with pytest.raises(TypeError, match="device strategy"):
        training.with_training_strategy("ddp")


def test_supervised_training_runs_on_the_strategy_it_was_given(tmp_path):
    torch.manual_seed(0)
    result = (SupervisedTraining(tmp_path, loader(32, 16), loader(32, 16)).metrics(LossMetric()).num_epochs(1)
              .progress_bar(False).with_application_logger(False)
              .with_training_strategy(TrainingStrategy.single_device("cpu"))
              .launch(Learner(Classifier(), AdamConfig(), 1e-2)))
    trainer = result.trainer
    assert type(trainer.accelerator).__name__ == "CPUAccelerator" and trainer.num_devices == 1
    assert trainer.global_step == 2 and (tmp_path / "valid" / "epoch-1" / "Loss.log").exists()


def trained(tmp_path):
    torch.manual_seed(0)
    return (LearnerBuilder(tmp_path / "train").metrics(LossMetric()).devices(["cpu"]).progress_bar(False)
            .with_application_logger(False).build(Classifier(), AdamConfig(), 5e-2)
            .fit(loader(64, 16), loader(32, 16)).model)


def test_evaluator_execution_trainer_kwargs_text_metrics_and_log(tmp_path):
    model = trained(tmp_path)
    builder = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).metrics_text(AccuracyMetric()).progress_bar(False)
               .trainer_kwargs(limit_test_batches=2))
    assert builder.trainer_kwargs_for(model)["devices"] == 1  # default: the model's device
    assert builder.execution(TrainingStrategy.multi_device(["cpu", "cpu"])) is builder
    kwargs = builder.trainer_kwargs_for(model)
    assert (kwargs["accelerator"], kwargs["devices"], kwargs["strategy"]) == ("cpu", 2, "ddp")
    builder.execution(TrainingStrategy.single_device("cpu"))
    kwargs = builder.trainer_kwargs_for(model)
    assert (kwargs["accelerator"], kwargs["devices"], kwargs["limit_test_batches"]) == ("cpu", 1, 2)
    assert builder.trainer_kwargs(logger=True).trainer_kwargs_for(model)["logger"] is True  # given kwargs win
    builder.trainer_kwargs(logger=False)
    assert builder.with_application_logger(False) is builder
    test = loader(96, 16, seed=2)  # 6 batches, 2 of them evaluated
    result = builder.build(model).eval("held out", test)
    assert result.trainer.num_devices == 1 and not (tmp_path / "evaluation.log").exists()
    folder = tmp_path / "test" / "held-out" / "epoch-1"
    assert len((folder / "Accuracy.log").read_text().splitlines()) == 2  # limit_test_batches=2
    with torch.no_grad():
        batches = list(test)[:2]
        correct = sum(int((model(b.x).argmax(-1) == b.y).sum()) for b in batches)
    assert result.metrics["Accuracy"] == pytest.approx(100 * correct / 32)
    evaluator = builder.build(model)
    evaluator.eval("again", test)
    assert evaluator.results == {"again": {"Loss": pytest.approx(result.metrics["Loss"])}}  # text: not summarised
    builder.with_application_logger(True).build(model).eval("logged", test)
    assert "evaluating Classifier on test/logged" in (tmp_path / "evaluation.log").read_text()
    with pytest.raises(TypeError, match="device strategy"):
        builder.execution(["cpu"])


def test_step_module_forward_is_the_models_forward(tmp_path):
    learner = LearnerBuilder(tmp_path).metrics(LossMetric()).progress_bar(False).build(
        Classifier(), AdamConfig(), 1e-2)
    x = torch.randn(5, 4)
    assert torch.equal(learner.module(x), learner.model(x))
    assert torch.equal(learner.module.forward(x), learner.model.linear(x))
