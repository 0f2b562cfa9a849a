"""`burnlike.train.learning_strategy`: Burn's custom learning strategies
(`TrainingStrategy::Custom`, burn-train `learner/supervised/strategies/base.rs`). The user's `fit`
runs the loop with the Learner's methods; burnlike supplies the components: the metrics and their
Burn log files, the store, the learning checkpointer (model/optim/scheduler-N), early stopping, the
interrupter and the summary."""

from __future__ import annotations

import logging

import pytest
import torch

import burnlike
from burnlike.data import DataLoaderBuilder
from burnlike.data.dataloader import Progress
from burnlike.optim import AdamConfig, GradientsParams, SgdConfig
from burnlike.optim.adan import AdanConfig
from burnlike.optim.lr_scheduler import LinearLrSchedulerConfig, StepLrSchedulerConfig
from burnlike.record import NamedMpkFileRecorder
from burnlike.record.error import RecordError
from burnlike.record.format.registry import sniff
from burnlike.record.tensor.precision import FullPrecisionSettings
from burnlike.train import (
    KeepLastNCheckpoints,
    Learner,
    LearnerEvent,
    MetricEarlyStoppingStrategy,
    StoppingCondition,
    SupervisedLearningStrategy,
    SupervisedTraining,
    TrainingItem,
    TrainingStrategy,
)
from burnlike.train.learning_strategy import LearningCheckpointer
from burnlike.train.logger import read_epochs
from burnlike.train.metric import AccuracyMetric, LossMetric
from tests.helpers.fit import StackingBatcher
from tests.helpers.toy import Classifier, blobs
from tests.train.helpers import OwnNamesRecorder


class EpochLoop(SupervisedLearningStrategy):
    """Burn's single-device loop (`single/strategy.rs`, `single/epoch.rs`) written as a user writes a
    custom strategy: lr_step before each step, train, optimize, report; validate; checkpoint; stop
    early when the strategy says so."""

    def __init__(self) -> None:
        self.epochs_run: list[int] = []
        self.lrs: list[float] = []

    def fit(self, training_components, learner, dataloader_train, dataloader_valid, starting_epoch):
        processor = training_components.event_processor
        n = training_components.num_epochs
        for epoch in range(starting_epoch, n + 1):
            self.epochs_run.append(epoch)
            iterator = dataloader_train.iter()
            for iteration, batch in enumerate(iterator, start=1):
                learner.lr_step()
                self.lrs.append(learner.lr_current())
                out = learner.train_step(batch)
                learner.optimizer_step(out.grads)
                processor.process_train(LearnerEvent.ProcessedItem(
                    TrainingItem(out.item, iterator.progress(), Progress.new(epoch, n), iteration, learner.lr_current())))
                if training_components.interrupter.should_stop():
                    break
            processor.process_train(LearnerEvent.EndEpoch(epoch))
            if training_components.interrupter.should_stop():
                break
            model = learner.model().valid()
            iterator = dataloader_valid.iter()
            for iteration, batch in enumerate(iterator, start=1):
                processor.process_valid(LearnerEvent.ProcessedItem(
                    TrainingItem(model.valid_step(batch), iterator.progress(), Progress.new(epoch, n), iteration)))
            processor.process_valid(LearnerEvent.EndEpoch(epoch))
            if training_components.checkpointer is not None:
                training_components.checkpointer.checkpoint(learner, epoch, training_components.event_store)
            stopping = training_components.early_stopping
            if stopping is not None and stopping.should_stop(epoch, training_components.event_store):
                break
        return learner.model(), processor


def loaders():
    train = DataLoaderBuilder(StackingBatcher()).batch_size(32).build(blobs(96))
    valid = DataLoaderBuilder(StackingBatcher()).batch_size(50).build(blobs(50, seed=2))
    return train, valid


def training(root, strategy, epochs=3):
    train, valid = loaders()
    return (SupervisedTraining(root, train, valid).metrics(AccuracyMetric(), LossMetric()).num_epochs(epochs)
            .with_application_logger(None).with_training_strategy(TrainingStrategy.Custom(strategy)))


def by_hand(epochs: int, lr_config, optim_config) -> torch.nn.Module:
    """The same loop without burnlike's learner: the optimizer stepped at the schedule's k-th rate."""
    burnlike.seed(0)
    model = Classifier()
    optim, scheduler = optim_config.init(), lr_config.init()
    train, _ = loaders()
    for _ in range(epochs):
        for batch in train:
            lr = scheduler.step()
            out = model.train_step(batch)
            model = optim.step(lr, model, GradientsParams.from_grads(out.grads, model))
    return model


def test_a_custom_strategy_trains_exactly_as_its_loop_says_with_burns_schedule_order(tmp_path):
    """`lr_step()` before each step gives the schedule's k-th rate from k = 1 (Burn's
    `learner.lr_step()` per item); `optimizer_step` applies it: the weights equal a hand-written loop's."""
    burnlike.seed(0)
    strategy = EpochLoop()
    schedule = StepLrSchedulerConfig(0.1, 2, 0.5)
    result = training(tmp_path, strategy).launch(Learner(Classifier(), SgdConfig(), schedule))
    assert strategy.epochs_run == [1, 2, 3]
    assert strategy.lrs == [schedule.init().lr_at(k) for k in range(1, 10)]  # 3 batches x 3 epochs
    expected = by_hand(3, schedule, SgdConfig())
    assert all(torch.equal(a, b) for a, b in zip(result.model.state_dict().values(), expected.state_dict().values()))
    assert result.trainer is None and not result.model.training


def test_the_event_processor_writes_burns_metric_logs_and_the_store_for_every_epoch(tmp_path):
    burnlike.seed(0)
    result = training(tmp_path, EpochLoop()).summary().launch(Learner(Classifier(), AdamConfig(), 1e-2))
    for split in ("train", "valid"):
        for name in ("Accuracy", "Loss"):
            logged = read_epochs(tmp_path, split, name)
            assert sorted(logged) == [1, 2, 3]
            assert {e: result.summary.get(split, name).epochs[e] for e in logged} == pytest.approx(logged)
    train_lines = (tmp_path / "train" / "epoch-1" / "Accuracy.log").read_text().splitlines()
    assert len(train_lines) == 3 and all(line.endswith(",32") for line in train_lines)  # value,count per step
    assert (tmp_path / "metrics.png").exists()


def test_the_checkpointer_writes_burns_three_files_and_keeps_the_last_n(tmp_path):
    burnlike.seed(0)
    recorder = NamedMpkFileRecorder(FullPrecisionSettings())
    (training(tmp_path, EpochLoop()).with_file_checkpointer(recorder)
     .with_checkpointing_strategy(KeepLastNCheckpoints(2)).launch(Learner(Classifier(), AdamConfig(), 1e-2)))
    names = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    assert names == [f"{kind}-{n}.mpk" for kind in ("model", "optim", "scheduler") for n in (2, 3)]
    optim = sniff(tmp_path / "checkpoint" / "optim-3.mpk").load(tmp_path / "checkpoint" / "optim-3.mpk")
    # Burn's Adam record: ParamId -> {"V1": {"Rank<D>": {"momentum": {...}}}}, one per parameter
    assert len(optim) == 2 and all(set(v) == {"V1"} for v in optim.values())
    assert sorted(next(iter(v["V1"])) for v in optim.values()) == ["Rank1", "Rank2"]
    scheduler = sniff(tmp_path / "checkpoint" / "scheduler-3.mpk").load(tmp_path / "checkpoint" / "scheduler-3.mpk")
    assert scheduler is None  # Burn's record of a constant rate, `()` (burn-optim lr_scheduler/constant.rs)


@pytest.mark.parametrize(("resume", "recorder"), [(2, NamedMpkFileRecorder(FullPrecisionSettings())),
                                                ("last", OwnNamesRecorder())])
def test_a_resumed_custom_run_ends_with_the_uninterrupted_weights_and_logs(tmp_path, resume, recorder):
    """`checkpoint(N)` (or "last") loads model/optim/scheduler-N, starts at N + 1 and keeps the
    earlier epochs' values from the logs: the weights and every epoch's value match a run of 4. A
    recorder with its own names (`path_for`) finds its epoch files by the checkpointer's."""
    schedule = StepLrSchedulerConfig(0.05, 2, 0.5)
    burnlike.seed(0)
    whole = (training(tmp_path / "whole", EpochLoop(), epochs=4).with_file_checkpointer(recorder)
             .launch(Learner(Classifier(), AdamConfig(), schedule)))
    burnlike.seed(0)
    training(tmp_path / "cut", EpochLoop(), epochs=2).with_file_checkpointer(recorder).launch(
        Learner(Classifier(), AdamConfig(), schedule))
    strategy = EpochLoop()
    burnlike.seed(1)  # a fresh model: everything it trains from comes from the checkpoint
    resumed = (training(tmp_path / "cut", strategy, epochs=4).with_file_checkpointer(recorder).checkpoint(resume)
               .summary().launch(Learner(Classifier(), AdamConfig(), schedule)))
    assert strategy.epochs_run == [3, 4]
    assert strategy.lrs == [schedule.init().lr_at(k) for k in range(7, 13)]
    for a, b in zip(resumed.model.state_dict().values(), whole.model.state_dict().values()):
        assert torch.equal(a, b)
    for split in ("train", "valid"):
        assert read_epochs(tmp_path / "cut", split, "Loss") == read_epochs(tmp_path / "whole", split, "Loss")
    assert sorted(resumed.summary.get("valid", "Loss").epochs) == [1, 2, 3, 4]


def test_early_stopping_and_the_interrupter_reach_the_custom_loop(tmp_path):
    burnlike.seed(0)
    strategy = EpochLoop()
    stopping = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.NoImprovementSince(n_epochs=1))
    training(tmp_path / "early", strategy, epochs=50).early_stopping(stopping).launch(
        Learner(Classifier(), SgdConfig(), 1e3))  # a rate that diverges: the loss stops improving
    assert 2 <= len(strategy.epochs_run) < 50
    strategy = EpochLoop()
    built = training(tmp_path / "stop", strategy, epochs=5)
    built.interrupter().stop("enough")
    built.launch(Learner(Classifier(), SgdConfig(), 0.1))
    assert strategy.epochs_run == [1] and len(strategy.lrs) == 1


def test_lightning_settings_a_custom_loop_cannot_apply_are_refused_by_name(tmp_path):
    for configure, name in ((lambda t: t.trainer_kwargs(precision="16-mixed"), "trainer_kwargs(...)"),
                            (lambda t: t.cuda_graph(), "cuda_graph()")):
        with pytest.raises(ValueError, match=r"TrainingStrategy.Custom\(strategy\) runs your strategy's fit.*"
                                             + name.replace("(", r"\(").replace(")", r"\)")):
            configure(training(tmp_path, EpochLoop())).launch(Learner(Classifier(), SgdConfig(), 0.1))
    with pytest.raises(ValueError, match=r"checkpoint\(epoch\) needs with_file_checkpointer"):
        training(tmp_path, EpochLoop()).checkpoint(1).launch(Learner(Classifier(), SgdConfig(), 0.1))
    with pytest.raises(TypeError, match="places the model itself"):
        TrainingStrategy.Custom(EpochLoop(), ["cpu"])


def test_custom_still_takes_a_lightning_strategy_for_the_trainer(tmp_path):
    from lightning.pytorch.strategies import SingleDeviceStrategy

    execution = TrainingStrategy.Custom(SingleDeviceStrategy("cpu"))
    assert isinstance(execution.trainer_kwargs()["strategy"], SingleDeviceStrategy)
    assert TrainingStrategy.custom(EpochLoop()).__class__ is EpochLoop


# --- the learning checkpointer on its own ----------------------------------------------------------
def trained_checkpointer(folder, optim_config=None) -> tuple[LearningCheckpointer, Learner]:
    """A checkpointer whose epoch 1 holds a learner after one Adam step (its optim-1 is Burn's Adam
    record, its scheduler-1 `{"iteration": 1}`)."""
    burnlike.seed(0)
    learner = Learner(Classifier(), optim_config or AdamConfig(), 1e-2)
    train, _ = loaders()
    learner.lr_step()
    learner.optimizer_step(learner.train_step(next(iter(train))).grads)
    checkpointer = LearningCheckpointer(folder, NamedMpkFileRecorder(FullPrecisionSettings()), KeepLastNCheckpoints(2))
    checkpointer.save(learner, 1)
    return checkpointer, learner


def test_a_save_logs_the_model_file_it_writes(tmp_path, caplog):
    with caplog.at_level(logging.DEBUG, logger="burnlike.train"):
        trained_checkpointer(tmp_path)
    assert f"saving checkpoint {tmp_path / 'model-1.mpk'}" in [r.getMessage() for r in caplog.records]


def test_each_checkpoint_file_is_on_the_disk_before_it_replaces_the_old_one(tmp_path, disk_calls):
    """Burn's three files of an epoch are saved durably (fsynced, then renamed), as the Lightning
    fit's checkpoints: a node crash right after a save leaves no empty file to resume from."""
    trained_checkpointer(tmp_path)
    for kind in ("model", "optim", "scheduler"):
        target = tmp_path / f"{kind}-1.mpk"
        [rename] = [i for i, call in enumerate(disk_calls) if call[0] == "replace" and call[3] == target]
        inode = disk_calls[rename][1]
        assert ("fsync", inode, "file") in disk_calls[:rename], kind


def test_a_checkpoint_loaded_onto_a_device_fills_the_model_moved_there(tmp_path):
    checkpointer, saved = trained_checkpointer(tmp_path)
    burnlike.seed(1)
    learner = checkpointer.load_checkpoint(Learner(Classifier(), AdamConfig(), 1e-2), "cpu", 1)
    for got, want in zip(learner.model().state_dict().values(), saved.model().state_dict().values()):
        assert torch.equal(got, want)


def test_a_scheduler_file_that_is_not_the_schedulers_burn_record_is_named_with_what_was_expected(tmp_path):
    checkpointer, _ = trained_checkpointer(tmp_path)
    checkpointer.recorder.record("one", tmp_path / "scheduler-1.mpk", exact_path=True)
    with pytest.raises(RecordError) as caught:
        checkpointer.load_checkpoint(Learner(Classifier(), AdamConfig(), 1e-2), None, 1)
    assert str(caught.value) == (f"{tmp_path / 'scheduler-1.mpk'}: not the record of ConstantLr (expected nothing "
                                 "(null), got 'one')")
    checkpointer.recorder.record(7, tmp_path / "scheduler-1.mpk", exact_path=True)
    with pytest.raises(RecordError) as caught:
        checkpointer.load_checkpoint(Learner(Classifier(), AdamConfig(), LinearLrSchedulerConfig(0.5, 0.1, 4)), None, 1)
    assert str(caught.value) == (f"{tmp_path / 'scheduler-1.mpk'}: not the record of LinearLrScheduler (expected the "
                                 "iterations left, an integer from 0 to 5, got 7)")


def test_a_burn_optimizer_record_for_an_optimizer_burn_has_none_for_names_the_optimizers_that_have(tmp_path):
    checkpointer, _ = trained_checkpointer(tmp_path)
    with pytest.raises(RecordError) as caught:
        checkpointer.load_checkpoint(Learner(Classifier(), AdanConfig(), 1e-2), None, 1)
    assert str(caught.value).endswith(
        "optim-1.mpk: a Burn optimizer record, but the learner's optimizer (Adan) has none "
        "(Adam, AdamW, SGD, RMSProp and AdaGrad do)")
