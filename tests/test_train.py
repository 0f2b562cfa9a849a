import os
from pathlib import Path

import lightning as L
import pytest
import torch
from toy import Classifier, Regressor, SelfBackward, UntypedRegressor, loader

from burnlike.optim import AdamConfig, SgdConfig, StepLrSchedulerConfig
from burnlike.train import (
    LearnerBuilder,
    MetricEarlyStoppingStrategy,
    MetricInputError,
    StepModule,
    StoppingCondition,
)
from burnlike.train.builder import trainer_devices
from burnlike.train.logger import read_epochs, read_metric_log, rust_f64
from burnlike.train.metric import AccuracyMetric, LearningRateMetric, LossMetric, TopKAccuracyMetric


def builder(tmp_path, epochs=2):
    return (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .devices(["cpu"])
        .num_epochs(epochs)
        .progress_bar(False)
    )


def test_metric_the_output_cannot_feed_fails_at_build(tmp_path):
    b = LearnerBuilder(tmp_path).metric_valid_numeric(AccuracyMetric())
    with pytest.raises(MetricInputError, match="Accuracy.*RegressionOutput"):
        b.build(Regressor(), AdamConfig(), 1e-3)
    # Loss is fine for a regression output.
    LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).build(Regressor(), AdamConfig(), 1e-3)


def test_untyped_model_mismatch_fails_at_first_step(tmp_path):
    learner = LearnerBuilder(tmp_path).metric_train(AccuracyMetric()).progress_bar(False).build(
        UntypedRegressor(), AdamConfig(), 1e-3
    )
    with pytest.raises(MetricInputError, match="RegressionOutput"):
        learner.fit(loader(64))


def test_calling_backward_yourself_is_a_clear_error(tmp_path):
    learner = builder(tmp_path, 1).build(SelfBackward(), AdamConfig(), 1e-3)
    with pytest.raises(TypeError, match=r"loss\.backward\(\) yourself"):
        learner.fit(loader(64))


def test_accumulation_and_devices_reach_the_trainer(tmp_path):
    learner = builder(tmp_path, 1).grads_accumulation(4).build(Classifier(), AdamConfig(), 1e-3)
    trainer = learner.trainer
    assert trainer.accumulate_grad_batches == 4
    assert type(trainer.accelerator).__name__ == "CPUAccelerator" and trainer.num_devices == 1
    learner.fit(loader(256, 32))  # 8 batches → 2 optimizer steps
    assert trainer.global_step == 2


def test_device_translation():
    assert trainer_devices(["cpu"]) == {"accelerator": "cpu", "devices": 1}
    assert trainer_devices(["cuda:1", torch.device("cuda", 3)]) == {"accelerator": "gpu", "devices": [1, 3]}
    assert trainer_devices([0]) == {"accelerator": "gpu", "devices": [0]}
    with pytest.raises(ValueError, match="one kind"):
        trainer_devices(["cpu", "cuda:0"])
    with pytest.raises(ValueError, match="not a device"):
        trainer_devices(["gpu-ish"])


def test_bad_builder_values_are_named(tmp_path):
    with pytest.raises(ValueError, match="num_epochs"):
        LearnerBuilder(tmp_path).num_epochs(0)
    with pytest.raises(ValueError, match="grads_accumulation"):
        LearnerBuilder(tmp_path).grads_accumulation(-1)


def test_fit_writes_burn_layout_and_logs_parse_back(tmp_path, capsys):
    torch.manual_seed(0)
    learner = builder(tmp_path, 3).metric_train(LearningRateMetric()).summary().build(Classifier(), AdamConfig(), 5e-2)
    result = learner.fit(loader(256, 32), loader(128, 32, seed=1))
    assert (tmp_path / "experiment.log").read_text().count("epoch 3") >= 2
    lines = (tmp_path / "train" / "epoch-1" / "Accuracy.log").read_text().splitlines()
    assert len(lines) == 8 and all(line.endswith(",32") for line in lines)
    assert (tmp_path / "train" / "epoch-2" / "Learning_Rate.log").read_text().splitlines()[0] == "0.05,1"
    logged = result.trainer.callback_metrics
    for split in ("train", "valid"):
        for name in ("Accuracy", "Loss"):
            from_file = read_metric_log(tmp_path / split / "epoch-3" / f"{name}.log")
            assert from_file == pytest.approx(float(logged[f"{split}/{name}"]), rel=1e-5)
    # learning happened, and the summary table printed what the logs hold
    acc = read_epochs(tmp_path, "valid", "Accuracy")
    assert list(acc) == [1, 2, 3] and acc[3] > 80
    out = capsys.readouterr().out
    assert "Learner Summary" in out and "Total Epochs: 3" in out
    row = next(line for line in out.splitlines() if line.startswith("| Valid | Accuracy"))
    assert f"{max(acc.values()):.3f}" in row
    assert result.summary is not None and result.summary.get("valid", "Accuracy").max_value == max(acc.values())
    assert not result.model.training


def test_step_module_trains_under_a_plain_trainer():
    torch.manual_seed(0)
    module = StepModule(Classifier(), SgdConfig(), 0.1, [AccuracyMetric()], [AccuracyMetric(), LossMetric()])
    trainer = L.Trainer(max_epochs=3, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu")
    trainer.fit(module, loader(256, 32), loader(128, 32, seed=1))
    assert float(trainer.callback_metrics["valid/Accuracy"]) > 80
    assert float(trainer.callback_metrics["train/Accuracy"]) > 60


def test_lr_scheduler_is_stepped_per_iteration(tmp_path):
    learner = (LearnerBuilder(tmp_path).metric_train(LearningRateMetric()).num_epochs(1).progress_bar(False)
               .build(Classifier(), AdamConfig(), StepLrSchedulerConfig(0.1, 2, gamma=0.5)))
    learner.fit(loader(128, 32))
    values = [float(line.split(",")[0]) for line in
              (tmp_path / "train" / "epoch-1" / "Learning_Rate.log").read_text().splitlines()]
    assert values == pytest.approx([0.1, 0.1, 0.05, 0.05])


def test_early_stopping_stops_without_improvement(tmp_path):
    stop = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(1))
    learner = builder(tmp_path, 10).early_stopping(stop).build(Classifier(), AdamConfig(), 0.0)  # lr 0: no progress
    learner.fit(loader(64, 32), loader(64, 32))
    assert learner.trainer.current_epoch == 2  # best at epoch 1, no strict improvement in epoch 2 → stop


def test_accuracy_pad_token_and_topk():
    from burnlike.train import ClassificationOutput
    from burnlike.train.metric import MetricContext

    logits = torch.tensor([[5.0, 1.0, 0.0], [0.0, 5.0, 1.0], [0.0, 1.0, 5.0], [5.0, 0.0, 1.0]])
    targets = torch.tensor([0, 2, 2, 1])
    item = ClassificationOutput(torch.tensor(0.0), logits, targets)
    acc = AccuracyMetric()
    acc.update(item, MetricContext())
    assert acc.finish_epoch()[0] == pytest.approx(50.0)
    padded = AccuracyMetric().with_pad_token(1)  # the last target is padding
    padded.update(item, MetricContext())
    value, history = padded.finish_epoch()
    assert value == pytest.approx(200 / 3) and history[0][1] == 3
    top2 = TopKAccuracyMetric(2)
    top2.update(item, MetricContext())
    assert top2.name == "Top-K Accuracy @ TopK(2)" and top2.finish_epoch()[0] == pytest.approx(75.0)


@pytest.mark.parametrize(("x", "text"), [(93.75, "93.75"), (2.0, "2"), (1e-5, "0.00001"), (0.1, "0.1"),
                                          (float("nan"), "NaN"), (1e20, "100000000000000000000")])
def test_rust_float_display(x, text):
    assert rust_f64(x) == text


def test_confusion_metrics_and_hamming_match_definitions():
    from burnlike.train import ClassificationOutput, MultiLabelClassificationOutput
    from burnlike.train.metric import (
        ClassReduction,
        FBetaScoreMetric,
        HammingScore,
        MetricContext,
        PrecisionMetric,
        RecallMetric,
    )

    logits = torch.tensor([[3.0, 0.0], [0.0, 3.0], [0.0, 3.0], [3.0, 0.0]])
    targets = torch.tensor([0, 1, 0, 1])  # predictions 0,1,1,0
    item = ClassificationOutput(torch.tensor(0.0), logits, targets)
    for metric, expected in ((PrecisionMetric.multiclass(1, ClassReduction.MACRO), 50.0),
                             (RecallMetric.multiclass(1, ClassReduction.MICRO), 50.0),
                             (FBetaScoreMetric.multiclass(1.0), 50.0)):
        metric.update(item, MetricContext())
        assert metric.finish_epoch()[0] == pytest.approx(expected)
    assert PrecisionMetric.multiclass(2, ClassReduction.MICRO).name == "Precision @ TopK(2) [Micro]"
    multi = MultiLabelClassificationOutput(torch.tensor(0.0), torch.tensor([[0.9, 0.2], [0.7, 0.6]]),
                                           torch.tensor([[1, 0], [0, 1]]))
    ham = HammingScore()
    ham.update(multi, MetricContext())
    assert ham.name == "Hamming Score @ Threshold(0.5)" and ham.finish_epoch()[0] == pytest.approx(75.0)
    with pytest.raises(MetricInputError, match="hamming"):
        from burnlike.train.module import check_metrics

        check_metrics(ClassificationOutput, [HammingScore()], "valid")


REAL = Path(os.environ.get("BURNLIKE_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.mark.skipif(not (REAL / "MNIST" / "raw").is_dir(), reason="real MNIST not present")
@pytest.mark.slow
def test_guide_model_learns_on_a_real_mnist_subset(tmp_path):
    """Integration: the guide's model, data pipeline, metrics and compact checkpoints on real MNIST."""
    import burnlike
    from burnlike.data import DataLoaderBuilder, MnistBatcher, MnistDataset
    from burnlike.models.mnist import ModelConfig
    from burnlike.record import CompactRecorder

    burnlike.seed(42)
    train = torch.utils.data.Subset(MnistDataset.train(REAL), range(6400))
    valid = torch.utils.data.Subset(MnistDataset.test(REAL), range(2000))
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42)
    result = (builder(tmp_path, 1).with_file_checkpointer(CompactRecorder())
              .build(ModelConfig(10, 512).init("cpu"), AdamConfig().init(), 1e-3)
              .fit(loader.build(train), loader.build(valid)))
    assert read_metric_log(tmp_path / "valid" / "epoch-1" / "Accuracy.log") > 85.0
    assert (tmp_path / "checkpoint" / "model-1.mpk").exists()
    from burnlike.models.mnist import Model

    restored = Model(10, 512, 0.5).load_file(tmp_path / "checkpoint" / "model-1.mpk", CompactRecorder())
    assert torch.allclose(restored.linear2.weight, result.model.linear2.weight, atol=1e-2)
