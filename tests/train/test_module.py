"""`burnlike.train.module`: `StepModule`, the LightningModule wrapping a model with Burn's step
traits. Its forward is the model's; it trains under a plain Lightning Trainer, steps the LR
scheduler per iteration, meters each batch once (an L-BFGS closure runs the step several times),
keeps count-weighted epoch values over a short last batch and its metric store across a resume.
It checks the step's output type against the metrics (at build for a typed model, from the
Protocol's parameters or the step's annotations, else at the first step) and refuses gradients
other than `backward(loss)`, saying what they must be."""

from __future__ import annotations

import copy
import signal

import lightning as L
import pytest
import torch
from lightning.pytorch.trainer.states import TrainerFn
from torch import nn

from burnlike.autodiff import backward
from burnlike.module import Module
from burnlike.optim import (
    AdamConfig,
    LBFGSConfig,
    SgdConfig,
    StepLrSchedulerConfig,
)
from burnlike.record import DefaultRecorder
from burnlike.train import (
    ClassificationOutput,
    InferenceStep,
    Learner,
    LearnerBuilder,
    MetricInputError,
    RegressionOutput,
    SequenceOutput,
    Split,
    StepModule,
    SupervisedTraining,
    TrainOutput,
    TrainStep,
    ValidStep,
)
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import (
    AccuracyMetric,
    CharErrorRate,
    LearningRateMetric,
    LossMetric,
    PsnrMetric,
    PsnrMetricConfig,
)
from burnlike.train.module import _HISTORY_KEY, check_metrics, output_type, outputs_providing
from burnlike.train.preemption import BATCHES_DONE, Preempted
from tests.helpers.fit import SignalAfter, StackingBatcher, metrics_builder, same_weights
from tests.helpers.toy import Batch, Classifier, Regressor, SelfBackward, UntypedRegressor, blobs, loader
from tests.train.helpers import InferenceStepRegressor, Successor, valid_loss_builder


class AnnotatedInference(Module):
    """No Protocol parameters: the step methods' annotations are the associated types."""

    def __init__(self):
        super().__init__()
        self.inner = InferenceStepRegressor()

    def train_step(self, batch: Batch) -> TrainOutput[RegressionOutput]:
        return self.inner.train_step(batch)

    def inference_step(self, batch: Batch) -> RegressionOutput:
        return self.inner.inference_step(batch)


class LossAsGrads(Classifier):
    """Hands the loss itself over as the gradients."""

    def train_step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        item = self.step(batch)
        return TrainOutput(self, item.loss, item)  # type: ignore[arg-type]


class HintOnly(torch.nn.Module):
    """Declares its outputs only through the step methods' return hints, not `TrainStep[B, O]`:
    each step a different type, so a hint read from the wrong method shows."""

    def train_step(self, batch: object) -> TrainOutput[ClassificationOutput]:
        raise NotImplementedError

    def valid_step(self, batch: object) -> RegressionOutput:
        raise NotImplementedError

    def inference_step(self, batch: object) -> SequenceOutput:
        raise NotImplementedError


class PerSampleValidLoss(Classifier):
    """Train step: the usual mean loss. Valid step: the per-sample loss vector (reduction='none')."""

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        out = self(batch.x)
        return ClassificationOutput(nn.functional.cross_entropy(out, batch.y, reduction="none"), out, batch.y)

    def train_step(self, batch: Batch) -> TrainOutput[ClassificationOutput]:
        item = self.step(batch)
        return TrainOutput(self, backward(item.loss), item)


# --- forward, training, metering -------------------------------------------------------------------
def test_step_module_forward_is_the_models_forward(tmp_path):
    learner = LearnerBuilder(tmp_path).metrics(LossMetric()).progress_bar(False).build(
        Classifier(), AdamConfig(), 1e-2)
    x = torch.randn(5, 4)
    assert torch.equal(learner.module(x), learner.model()(x))
    assert torch.equal(learner.module.forward(x), learner.model().linear(x))


def test_step_module_forwards_keyword_arguments_to_the_model():
    model = Classifier()
    module = StepModule(model, AdamConfig(), 1e-3, [], [])
    x = torch.randn(2, 4)
    assert torch.equal(module(x=x), model(x))


def test_step_module_trains_under_a_plain_trainer():
    torch.manual_seed(0)
    module = StepModule(Classifier(), SgdConfig(), 0.1, [AccuracyMetric()], [AccuracyMetric(), LossMetric()])
    trainer = L.Trainer(max_epochs=3, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu")
    trainer.fit(module, loader(256, 32), loader(128, 32, seed=1))
    assert float(trainer.callback_metrics["valid/Accuracy"]) > 80
    assert float(trainer.callback_metrics["train/Accuracy"]) > 60
    assert {k: float(v) for k, v in trainer.callback_metrics.items()}  # every value is a number


def test_callback_metrics_hold_numbers_only_after_a_learners_fit(tmp_path):
    """The metric store rides in callback_metrics out of ddp_spawn's processes only, and `fit` takes it out."""
    result = metrics_builder(tmp_path, epochs=1).build(Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16))
    assert sorted(result.trainer.callback_metrics) == ["train/Accuracy", "train/Loss", "valid/Accuracy", "valid/Loss"]
    assert all(isinstance(float(v), float) for v in result.trainer.callback_metrics.values())


def test_step_module_accumulates_as_burn_under_a_plain_trainer():
    """burn-train/src/learner/supervised/strategies/single/epoch.rs (v0.21.0): `grads_accumulation=n`
    sums n batches' gradients per optimizer step; in a plain Trainer (manual optimization) too."""
    torch.manual_seed(0)
    default = StepModule(Classifier(), SgdConfig(), 0.1, [], [])
    twice = copy.deepcopy(default.model)
    module = StepModule(twice, SgdConfig(), 0.1, [], [], grads_accumulation=2)
    assert not module.automatic_optimization and module.manual_step.accumulation == 2
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu")
    data = loader(64, 32)
    trainer.fit(module, data)
    assert trainer.global_step == 1
    # by hand: SGD steps once on the sum of the two batches' gradients, at lr 0.1
    by_hand = copy.deepcopy(default.model)
    total = sum(torch.nn.functional.cross_entropy(by_hand(b.x), b.y) for b in data)
    total.backward()
    with torch.no_grad():
        for p in by_hand.parameters():
            p -= 0.1 * p.grad
    for got, want in zip(module.model.parameters(), by_hand.parameters()):
        assert torch.allclose(got, want, atol=1e-6)


def test_one_metric_instance_given_for_both_splits_becomes_one_instance_per_split():
    """Burn registers each split's metrics separately: the valid split gets a clone, so its steps
    and epoch ends never touch the train split's."""
    accuracy = AccuracyMetric()
    module = StepModule(Classifier(), SgdConfig(), 0.1, [accuracy], [accuracy])
    [train], [valid] = module.metrics("train"), module.metrics("valid")
    assert train is accuracy and isinstance(valid, AccuracyMetric) and valid is not accuracy
    assert list(module.valid_metrics) == [valid]


@pytest.mark.parametrize("accumulation", [0, -1, 1.5, True])
def test_step_module_names_a_bad_accumulation(accumulation):
    with pytest.raises(ValueError, match=rf"^grads_accumulation must be a positive integer, got {accumulation!r}$"):
        StepModule(Classifier(), SgdConfig(), 0.1, grads_accumulation=accumulation)


def test_lbfgs_refuses_gradient_accumulation(tmp_path):
    with pytest.raises(TypeError, match=r"^grads_accumulation\(n\) with L-BFGS: its step re-runs the batch"):
        LearnerBuilder(tmp_path).grads_accumulation(2).progress_bar(False).build(Classifier(), LBFGSConfig(), 0.5)


def test_lr_scheduler_is_stepped_per_iteration(tmp_path):
    learner = (LearnerBuilder(tmp_path).metric_train(LearningRateMetric()).num_epochs(1).progress_bar(False)
               .build(Classifier(), AdamConfig(), StepLrSchedulerConfig(0.1, 2, gamma=0.5)))
    learner.fit(loader(128, 32))
    values = [float(line.split(",")[0]) for line in
              (tmp_path / "train" / "epoch-1" / "Learning_Rate.log").read_text().splitlines()]
    assert values == pytest.approx([0.1, 0.1, 0.05, 0.05])


def test_lbfgs_under_the_learner_trains_and_meters_each_batch_once(tmp_path):
    torch.manual_seed(0)
    learner = (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).num_epochs(2).devices(["cpu"])
               .progress_bar(False).with_application_logger(False)
               .build(Classifier(), LBFGSConfig(max_iter=5, history_size=10), 0.5))
    calls = {"n": 0}
    step = learner.model().train_step

    def counting(batch):
        calls["n"] += 1
        return step(batch)

    learner.model().train_step = counting
    result = learner.fit(loader(128, 32))
    assert result.trainer.global_step == 8 and calls["n"] > 8  # the closure ran several times a batch
    lines = (tmp_path / "train" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert len(lines) == 4  # ... but each batch is counted once by the metrics
    first, last = (read_metric_log(tmp_path / "train" / f"epoch-{e}" / "Loss.log") for e in (1, 2))
    assert last < 0.5 * first


def test_trainer_epoch_values_are_count_weighted_over_a_short_last_batch(tmp_path):
    torch.manual_seed(7)  # an initial model that gets 23/32 and 4/8 right
    model = PerSampleValidLoss()
    data = loader(40, 32)  # batches of 32 and 8
    x = torch.cat([b.x for b in data])
    y = torch.cat([b.y for b in data])
    with torch.no_grad():  # lr 0: the weights the whole run sees
        logits = model(x)
        right = (logits.argmax(1) == y).float()
        per_sample = nn.functional.cross_entropy(logits, y, reduction="none")
    accuracy = 100 * right.mean().item()
    batch_means = [right[:32].mean().item() * 100, right[32:].mean().item() * 100]
    assert abs(accuracy - sum(batch_means) / 2) > 1  # the wrong rule would give another number
    valid_loss = per_sample.mean().item()
    assert abs(valid_loss - (per_sample[:32].mean() + per_sample[32:].mean()).item() / 2) > 1e-3
    train_loss = (per_sample[:32].mean() + per_sample[32:].mean()).item() / 2  # scalar loss: 1 per batch

    learner = (LearnerBuilder(tmp_path).metric_train_numeric(AccuracyMetric()).metric_train_numeric(LossMetric())
               .metric_valid_numeric(AccuracyMetric()).metric_valid_numeric(LossMetric())
               .num_epochs(1).progress_bar(False).build(model, SgdConfig(), 0.0))
    learner.fit(data, data)
    logged = {k: float(v) for k, v in learner.trainer.callback_metrics.items()}
    assert logged["train/Accuracy"] == pytest.approx(accuracy, rel=1e-6)
    assert logged["valid/Accuracy"] == pytest.approx(accuracy, rel=1e-6)
    assert logged["valid/Loss"] == pytest.approx(valid_loss, rel=1e-5)
    assert logged["train/Loss"] == pytest.approx(train_loss, rel=1e-5)
    lines = (tmp_path / "valid" / "epoch-1" / "Loss.log").read_text().splitlines()
    assert [line.split(",")[1] for line in lines] == ["32", "8"]


def test_an_epochs_train_values_are_stored_before_its_closing_validations(tmp_path):
    """Burn logs train, then valid: the train epoch is complete when its closing validation starts,
    so it is stored (and every listener told: logs, loggers, progress lines) before the valid one."""
    learner = metrics_builder(tmp_path, epochs=2).build(Classifier(), AdamConfig(), 1e-2)
    order = []
    learner.module.store.add_listener(lambda split, epoch, entries: order.append((split.value, epoch)))
    learner.fit(loader(64, 16), loader(32, 16))
    assert order == [("train", 1), ("valid", 1), ("train", 2), ("valid", 2)]
    no_valid = metrics_builder(tmp_path / "b", epochs=2).build(Classifier(), AdamConfig(), 1e-2)
    seen = []
    no_valid.module.store.add_listener(lambda split, epoch, entries: seen.append((split.value, epoch)))
    no_valid.fit(loader(64, 16))
    assert seen == [("train", 1), ("train", 2)]  # without validation: at the epoch's end


def attached(module: StepModule, *, ready: int, last: bool, batches: int = 4) -> StepModule:
    """`module` in a fitting Trainer whose train part has run `ready` of its `batches` batches,
    with Lightning's `is_last_batch` flag `last` (the hooks read the fit loop's progress)."""
    trainer = L.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.state.fn = TrainerFn.FITTING
    trainer.fit_loop.max_batches = batches
    progress = trainer.fit_loop.epoch_loop.batch_progress
    progress.current.ready, progress.is_last_batch = ready, last
    module.trainer = trainer
    return module


def test_a_validation_starting_after_the_epochs_last_train_batch_stores_the_train_epoch_first():
    """The batch count alone says the train part is done: the train epoch is stored when the
    validation starts even where Lightning's data fetcher hasn't flagged the last batch; a
    validation in mid-epoch (`val_check_interval`) leaves the epoch open."""
    for ready, last, stored in ((4, False, [("train", 1)]), (4, True, [("train", 1)]), (3, False, [])):
        module = attached(StepModule(Classifier(), SgdConfig(), 0.1), ready=ready, last=last)
        seen = []
        module.store.add_listener(lambda split, epoch, entries, seen=seen: seen.append((split.value, epoch)))
        module.on_validation_epoch_start()
        assert seen == stored, (ready, last)


class FinishOnLastBatch(L.Callback):
    """Ends the train epoch from a step-level hook, at the epoch's last batch."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx + 1 == trainer.num_training_batches:
            pl_module.finish_epoch("train")


def test_an_epoch_finished_from_a_step_hook_is_logged_under_its_split_name_as_an_epoch_value():
    """`finish_epoch` is public: called from a per-batch hook it still logs the epoch value as
    `split/Name` (what Lightning's callbacks monitor), not as per-step `_step`/`_epoch` pairs."""
    module = StepModule(Classifier(), SgdConfig(), 0.1, [LossMetric()])
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu", callbacks=[FinishOnLastBatch()])
    trainer.fit(module, loader(64, 16))
    logged = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("train/")}
    assert logged == {"train/Loss": pytest.approx(module.store.epochs(Split.TRAIN, "Loss")[1])}


def shuffled_fit(root, *callbacks, resume=False):
    """3 epochs of accuracy and loss on seeded shuffled loaders (train and valid), checkpointed."""
    from burnlike.data import DataLoaderBuilder

    builder = (metrics_builder(root, epochs=3).with_file_checkpointer(DefaultRecorder())
               .with_application_logger(False).callback(*callbacks))
    if resume:
        builder = builder.checkpoint("last")
    torch.manual_seed(0)
    learner = builder.build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(DataLoaderBuilder(StackingBatcher()).batch_size(16).shuffle(3).build(blobs(64)),
                DataLoaderBuilder(StackingBatcher()).batch_size(16).shuffle(4).build(blobs(48, seed=1)))
    return learner


def test_a_mid_epoch_resume_continues_the_epochs_metrics_and_logs_exactly(tmp_path):
    """A checkpoint saved mid-epoch carries the epoch's steps so far: the resumed epoch's value and
    its `value,count` lines are the uninterrupted run's (they held only the steps after the resume),
    and the seeded loaders' orders, train and valid, are the ones the run would have drawn."""
    straight = shuffled_fit(tmp_path / "straight")
    run = tmp_path / "run"
    with pytest.raises(Preempted):
        shuffled_fit(run, SignalAfter(5, signal.SIGUSR1))  # epoch 2 stopped after 2 of its 4 steps
    assert (run / "checkpoint" / "preempted-6.mpk").is_file()
    resumed = shuffled_fit(run, resume=True)
    assert same_weights(straight.module.model, resumed.module.model)
    logs = sorted((tmp_path / "straight").glob("*/epoch-*/*.log"))
    assert len(logs) == 3 * (2 + 2)  # 3 epochs x (train, valid) x (Accuracy, Loss)
    for log in logs:
        assert (run / log.relative_to(tmp_path / "straight")).read_text() == log.read_text(), log
    for split in (Split.TRAIN, Split.VALID):
        for name in ("Accuracy", "Loss"):
            assert resumed.module.store.epochs(split, name) == straight.module.store.epochs(split, name)


def test_a_mid_epoch_checkpoint_of_another_world_size_gives_rank_0_every_ranks_steps():
    """Saved by 2 processes, resumed by 1: rank 0 continues the epoch with both ranks' steps (the
    epoch's value is the same: a count-weighted mean over all of them)."""
    module = attached(StepModule(Classifier(), SgdConfig(), 0.1, [LossMetric()]), ready=2, last=False)
    saved = {"ranks": [{"Loss": [[0.5, 16.0]]}, {"Loss": [[0.25, 16.0], [0.75, 8.0]]}]}
    module.on_load_checkpoint({BATCHES_DONE: 2, _HISTORY_KEY: saved})
    assert module.metrics("train")[0].host_history() == [(0.5, 16.0), (0.25, 16.0), (0.75, 8.0)]


def test_the_store_survives_a_resume(tmp_path):
    torch.manual_seed(0)
    first = metrics_builder(tmp_path, 2).with_file_checkpointer(DefaultRecorder()).build(Classifier(), AdamConfig(), 5e-2)
    first.fit(loader(128, 32), loader(64, 32, seed=1))
    before = first.module.store.epochs(Split.VALID, "Loss")
    resumed = metrics_builder(tmp_path, 3).with_file_checkpointer(DefaultRecorder()).checkpoint(2).build(Classifier(), AdamConfig(), 5e-2)
    resumed.fit(loader(128, 32), loader(64, 32, seed=1))
    after = resumed.module.store.epochs(Split.VALID, "Loss")
    assert list(after) == [1, 2, 3] and {e: after[e] for e in (1, 2)} == before


# --- the step's output type against the metrics ---------------------------------------------------
def test_the_output_types_are_read_from_the_step_methods_return_hints():
    assert output_type(HintOnly(), TrainStep) is ClassificationOutput
    assert output_type(HintOnly(), ValidStep) is RegressionOutput
    assert output_type(HintOnly(), InferenceStep) is SequenceOutput


def test_a_typed_models_metric_mismatch_fails_when_the_step_module_is_made():
    with pytest.raises(MetricInputError, match="Accuracy.*RegressionOutput"):
        StepModule(Regressor(), AdamConfig(), 1e-3, valid_metrics=[AccuracyMetric()])


def test_metric_the_output_cannot_feed_fails_at_build(tmp_path):
    b = LearnerBuilder(tmp_path).metric_valid_numeric(AccuracyMetric())
    with pytest.raises(MetricInputError, match="Accuracy.*RegressionOutput"):
        b.build(Regressor(), AdamConfig(), 1e-3)
    # Loss is fine for a regression output.
    LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).build(Regressor(), AdamConfig(), 1e-3)


def test_inference_step_types_are_checked_at_build_and_launch(tmp_path):
    for model in (InferenceStepRegressor(), AnnotatedInference()):
        with pytest.raises(MetricInputError, match="valid metric 'Accuracy'.*RegressionOutput"):
            LearnerBuilder(tmp_path).metric_valid(AccuracyMetric()).build(model, AdamConfig(), 1e-3)
    with pytest.raises(MetricInputError, match="RegressionOutput"):
        SupervisedTraining(tmp_path, loader(32), loader(32)).metrics(AccuracyMetric()).launch(
            Learner(InferenceStepRegressor(), AdamConfig(), 1e-3))
    result = (SupervisedTraining(tmp_path, loader(64), loader(64)).metrics(LossMetric()).num_epochs(1)
              .progress_bar(False).launch(Learner(InferenceStepRegressor(), AdamConfig(), 1e-2)))
    assert (tmp_path / "valid" / "epoch-1" / "Loss.log").exists() and not result.model.training


def test_sequence_output_cannot_feed_vision_metrics(tmp_path):
    with pytest.raises(MetricInputError, match="SequenceOutput"):
        LearnerBuilder(tmp_path).metric_valid(PsnrMetric(PsnrMetricConfig(1.0))).build(Successor(), AdamConfig(), 1e-3)


def test_a_mismatch_names_the_output_types_that_feed_the_metric():
    """The error suggests outputs that can feed the metric (Burn's `Adaptor` impls), never one that
    can't: CER needs a SequenceOutput, Accuracy a classification or sequence output."""
    with pytest.raises(MetricInputError) as e:
        check_metrics(ClassificationOutput, [CharErrorRate()], "valid")
    assert str(e.value).endswith("Return an output type that can feed it (SequenceOutput) or drop the metric.")
    with pytest.raises(MetricInputError) as e:
        check_metrics(RegressionOutput, [AccuracyMetric()], "train")
    assert "(ClassificationOutput or SequenceOutput)" in str(e.value)
    assert outputs_providing("perplexity") == ["ClassificationOutput", "SequenceOutput"]
    assert outputs_providing("nothing-feeds-this") == []


def test_untyped_model_mismatch_fails_at_first_step(tmp_path):
    learner = LearnerBuilder(tmp_path).metric_train(AccuracyMetric()).progress_bar(False).build(
        UntypedRegressor(), AdamConfig(), 1e-3
    )
    with pytest.raises(MetricInputError, match="RegressionOutput"):
        learner.fit(loader(64))


# --- the step's gradients --------------------------------------------------------------------------
@pytest.mark.parametrize(("model", "got"), [(SelfBackward, "NoneType"), (LossAsGrads, "Tensor")])
def test_a_step_with_wrong_grads_is_told_what_grads_must_be(tmp_path, model, got):
    learner = valid_loss_builder(tmp_path).build(model(), AdamConfig(), 1e-3)
    with pytest.raises(TypeError, match=r"^TrainOutput\.grads must be backward\(loss\) \(burnlike\.train\.backward\), "
                                        rf"got {got}\. Don't call loss\.backward\(\) yourself"):
        learner.fit(loader(32, 16))


def test_a_model_without_train_step_is_named_in_the_error():
    with pytest.raises(TypeError, match=r"^Linear must implement train_step\(batch\) \(burnlike\.train\.TrainStep\)$"):
        StepModule(nn.Linear(2, 2), SgdConfig(), 0.1)


def test_a_checkpoint_without_a_metric_store_loads_as_an_empty_one():
    """A plain Lightning checkpoint (saved by a run without burnlike's store) still resumes."""
    module = StepModule(Classifier(), SgdConfig(), 0.1)
    module.on_load_checkpoint({"state_dict": module.state_dict()})
    assert module.store.state_dict() == StepModule(Classifier(), SgdConfig(), 0.1).store.state_dict()
