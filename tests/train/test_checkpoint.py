"""`burnlike.train.checkpoint`: Burn's checkpointing and early stopping.

Checkpointing strategies (keep the last N, keep the metric's best, composed: delete only what all
let go; Burn's default keeps the last two and the best valid loss) and their state across a
resume; the file checkpointer (Burn's per-epoch `model-N`/`optim-N`/`scheduler-N`/`trainer-N`
files, removals logged, preempted files and stale temps cleared) and `newest_checkpoint` (by the
step inside the file). Early stopping with Burn's semantics: n epochs without a strict improvement
in the metric's own direction, NaN never improving, missing values never stopping, warm-up
epochs, a train metric checked after every train epoch even without validation, no say in a
fast dev run, and its state across a resume."""

from __future__ import annotations

import logging
import math
import os
import shutil
from pathlib import Path

import msgpack
import pytest
import torch

from burnlike.optim import (
    AdamConfig,
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
    SgdConfig,
)
from burnlike.record import DefaultRecorder, PrettyJsonFileRecorder
from burnlike.record.checkpoint.shard_folder import METADATA, write_training_state
from burnlike.train import (
    Aggregate,
    ClassificationOutput,
    ComposedCheckpointingStrategy,
    Direction,
    KeepLastNCheckpoints,
    LearnerBuilder,
    MetricCheckpointingStrategy,
    MetricEarlyStoppingStrategy,
    MetricStore,
    Split,
    StoppingCondition,
)
from burnlike.train.checkpoint import (
    CheckpointingAction,
    CheckpointingStrategy,
    Delete,
    FileCheckpointer,
    MetricEarlyStopping,
    Save,
    checkpoint_path,
    default_checkpointing_strategy,
    newest_checkpoint,
)
from burnlike.train.logger import read_epochs
from burnlike.train.metric import AccuracyMetric, CudaMetric, LearningRateMetric, LossMetric
from tests.helpers.fit import checkpointing_builder, cpu_builder, fit, metrics_builder, same_weights
from tests.helpers.records import dead_pid, temp_of
from tests.helpers.toy import Batch, Classifier, loader
from tests.train.helpers import NAN, OwnNamesRecorder, store_of, train_messages, write_checkpoint


def composed() -> ComposedCheckpointingStrategy:
    """Keep the last checkpoint and the lowest valid loss's."""
    return ComposedCheckpointingStrategy([KeepLastNCheckpoints(1),
                                          MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST)])


class ConstantTrainLoss(Classifier):
    """Its train loss is the same every epoch: never an improvement."""

    def train_step(self, batch: Batch):
        out = super().train_step(batch)
        return type(out)(out.model, out.grads, ClassificationOutput(torch.tensor(1.0), out.item.output,
                                                                    out.item.targets))


def early_stopping_run(tmp_path, **trainer_kwargs):
    """Up to 5 epochs of `ConstantTrainLoss`, stopping on the train loss (patience 1)."""
    strategy = MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST, split=Split.TRAIN)
    learner = (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .num_epochs(5).progress_bar(False).with_application_logger(False).devices(["cpu"])
               .early_stopping(strategy).trainer_kwargs(**trainer_kwargs)
               .build(ConstantTrainLoss(), SgdConfig(), 0.01))
    learner.fit(loader(16, 16), loader(16, 16))
    return learner, strategy


def loss_store(values: dict[int, float]) -> MetricStore:
    """A store holding valid losses (epoch -> value), the Loss metric registered (and so its direction)."""
    store = store_of(values)
    store.register([LossMetric()])
    return store


class NeverSaves(CheckpointingStrategy):
    """Never saves; deletes the epoch before."""

    def checkpointing(self, epoch: int, store: MetricStore) -> list[CheckpointingAction]:
        return [Delete(epoch - 1)] if epoch > 1 else []


class ScriptedValidLoss(Classifier):
    """Trains normally; its validation loss is `script[epoch - 1]` (one valid batch per epoch)."""

    def __init__(self, script: list[float]) -> None:
        super().__init__()
        self.script = script
        self.valid_calls = 0

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        item = self.step(batch)
        value = self.script[self.valid_calls]
        self.valid_calls += 1
        return ClassificationOutput(torch.tensor(value), item.output, item.targets)


def scripted_run(tmp_path, script, *, direction=Direction.LOWEST, patience=None, strategy=None):
    """Fit `ScriptedValidLoss(script)` for len(script) epochs; return the epochs run."""
    builder = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(len(script))
               .progress_bar(False).with_application_logger(False))
    if patience is not None:
        builder.early_stopping(MetricEarlyStoppingStrategy(
            LossMetric(), direction=direction, condition=StoppingCondition.no_improvement_since(patience)))
    if strategy is not None:
        builder.with_file_checkpointer(DefaultRecorder()).with_checkpointing_strategy(strategy)
    learner = builder.build(ScriptedValidLoss(script), SgdConfig(), 0.01)
    learner.fit(loader(32, 32), loader(32, 32, seed=1))
    logged = read_epochs(tmp_path, "valid", "Loss")
    assert list(logged.values()) == pytest.approx(script[: len(logged)])  # the script reached the metric
    return learner.trainer.current_epoch


def stopping(values: dict[int, float], n_epochs: int, metric=None) -> list[int]:
    """Epochs at which Burn's strategy says stop, fed from a store one epoch at a time."""
    store = MetricStore()
    store.register([metric or LossMetric()])
    strategy = MetricEarlyStoppingStrategy(metric or LossMetric(), condition=StoppingCondition.no_improvement_since(n_epochs))
    stops = []
    for epoch in range(1, max(values) + 1):
        if epoch in values:
            store.record(Split.VALID, epoch, (metric or LossMetric()).name, values[epoch])
        if strategy.should_stop(epoch, store):
            stops.append(epoch)
    return stops


# --- checkpointing strategies ----------------------------------------------------------------------
def test_keep_last_n_saves_every_epoch_and_deletes_the_one_n_back():
    s = KeepLastNCheckpoints(2)
    assert s.checkpointing(1, MetricStore()) == [Save()]
    assert s.checkpointing(3, MetricStore()) == [Save(), Delete(1)]


def test_metric_strategy_keeps_only_the_best():
    s = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST, split=Split.VALID)
    assert s.checkpointing(1, loss_store({1: 0.5})) == [Save()]
    assert s.checkpointing(2, loss_store({1: 0.5, 2: 0.7})) == []
    assert s.checkpointing(3, loss_store({1: 0.5, 2: 0.7, 3: 0.4})) == [Delete(1), Save()]
    # not logged: save every epoch
    assert MetricCheckpointingStrategy("Accuracy").checkpointing(1, MetricStore()) == [Save()]


def test_metric_checkpointing_highest_keeps_the_maximum():
    s = MetricCheckpointingStrategy("Accuracy", direction=Direction.HIGHEST, split=Split.VALID)
    history: dict[int, float] = {}
    actions = {}
    for epoch, value in {1: 50.0, 2: 40.0, 3: 70.0, 4: 70.0, 5: 60.0}.items():
        history[epoch] = value
        actions[epoch] = s.checkpointing(epoch, store_of(history, "Accuracy"))
    assert actions == {1: [Save()], 2: [], 3: [Delete(1), Save()], 4: [], 5: []}


def test_metric_checkpointing_reads_its_own_split():
    s = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST, split=Split.TRAIN)
    store = store_of({1: 0.1, 2: 0.9}, split="valid")
    store.record(Split.TRAIN, 1, "Loss", 0.9)
    store.record(Split.TRAIN, 2, "Loss", 0.1)
    assert s.checkpointing(1, store_of({1: 0.9}, split="train")) == [Save()]
    assert s.checkpointing(2, store) == [Delete(1), Save()]


def test_strategies_take_the_metrics_direction_and_validate_the_aggregate():
    store = MetricStore()
    store.register([AccuracyMetric()])
    strategy = MetricCheckpointingStrategy(AccuracyMetric())  # Burn's default split: valid
    for epoch, acc in enumerate([80.0, 90.0, 85.0], 1):
        store.record(Split.VALID, epoch, "Accuracy", acc)
        strategy.checkpointing(epoch, store)
    assert strategy.current == 2  # highest accuracy, not lowest
    by_name = MetricCheckpointingStrategy("Accuracy")  # a name: the registered metric's direction
    assert by_name.checkpointing(3, store) == [] and by_name.current == 2
    assert MetricCheckpointingStrategy("Accuracy", split=Split.TRAIN).checkpointing(1, store) == [Save()]
    with pytest.raises(ValueError, match="median"):
        MetricCheckpointingStrategy(LossMetric(), aggregate="median")
    with pytest.raises(ValueError, match="median"):
        MetricEarlyStoppingStrategy(LossMetric(), aggregate="median")
    with pytest.raises(ValueError, match="no direction"):
        MetricEarlyStoppingStrategy(CudaMetric(), split=Split.TRAIN)
    # Burn's LearningRate is not higher-is-better (burn-train/src/metric/learning_rate.rs, v0.21.0)
    assert MetricEarlyStoppingStrategy(LearningRateMetric(), split=Split.TRAIN).direction is Direction.LOWEST
    # Burn's spelling, all positional
    MetricCheckpointingStrategy(LossMetric(), Aggregate.MEAN, Direction.LOWEST, Split.VALID)


def test_composed_deletes_only_when_all_agree():
    strategy = ComposedCheckpointingStrategy.builder().add(KeepLastNCheckpoints(1)).add(
        MetricCheckpointingStrategy("Loss")).build()
    assert strategy.checkpointing(1, loss_store({1: 0.1})) == [Save()]
    # epoch 1 remains the best: keep-last wants it gone, the metric strategy does not
    assert strategy.checkpointing(2, loss_store({1: 0.1, 2: 0.9})) == [Save()]


def test_composed_of_two_keep_last_deletes_only_what_both_let_go():
    s = ComposedCheckpointingStrategy.builder().add(KeepLastNCheckpoints(1)).add(KeepLastNCheckpoints(2)).build()
    assert s.checkpointing(1, MetricStore()) == [Save()]
    assert s.checkpointing(2, MetricStore()) == [Save()]
    assert s.checkpointing(3, MetricStore()) == [Save(), Delete(1)]


def test_a_composed_strategy_saves_only_when_one_of_its_strategies_does():
    composed = ComposedCheckpointingStrategy([NeverSaves(), NeverSaves()])
    store = MetricStore()
    assert composed.checkpointing(1, store) == []
    actions = composed.checkpointing(2, store)
    assert not any(isinstance(a, Save) for a in actions)


def test_default_composed_strategy_keeps_last_two_plus_best():
    strategy = default_checkpointing_strategy()
    losses = {1: 0.2, 2: 0.5, 3: 0.6, 4: 0.7, 5: 0.1, 6: 0.3, 7: 0.4}
    kept: set[int] = set()
    for epoch in losses:
        for action in strategy.checkpointing(epoch, loss_store({e: losses[e] for e in losses if e <= epoch})):
            if isinstance(action, Save):
                kept.add(epoch)
            else:
                kept.discard(action.epoch)
        assert len(kept) <= 3
    assert kept == {5, 6, 7}  # best (5) and the last two
    assert isinstance(strategy, ComposedCheckpointingStrategy)


# --- checkpointing strategies' state across a resume -----------------------------------------------
def test_metric_checkpointing_state_round_trip_deletes_the_old_best_after_resume():
    straight = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST)
    store = store_of({1: 0.5, 2: 0.7})
    assert straight.checkpointing(1, store) == [Save()]
    assert straight.checkpointing(2, store) == []
    assert straight.state_dict() == {"current": 1}
    resumed = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST)
    resumed.load_state_dict(straight.state_dict())
    assert resumed.current == 1
    store.record(Split.VALID, 3, "Loss", 0.1)  # a new best: the resumed strategy drops epoch 1's files
    assert resumed.checkpointing(3, store) == [Delete(1), Save()]


def test_composed_strategy_resumes_with_what_each_child_had_deleted():
    store = store_of({1: 0.5, 2: 0.7})
    straight = composed()
    assert straight.checkpointing(1, store) == [Save()]
    assert straight.checkpointing(2, store) == [Save()]  # epoch 1 remains the best: kept
    state = straight.state_dict()
    assert state == {"deleted": [[1], [2]], "children": [{}, {"current": 1}]}
    resumed = composed()
    resumed.load_state_dict(state)
    store.record(Split.VALID, 3, "Loss", 0.1)
    # epoch 3 is the best: epoch 1 (best so far) and epoch 2 (last-1 already let it go) both go
    assert resumed.checkpointing(3, store) == [Save(), Delete(1), Delete(2)]
    assert straight.checkpointing(3, store) == [Save(), Delete(1), Delete(2)]


def test_composed_strategy_restores_its_deletions_and_its_childrens_state():
    best = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST)
    composed = ComposedCheckpointingStrategy([KeepLastNCheckpoints(2), best])
    state = {"deleted": [[1], []], "children": [{}, {"current": 3}]}
    composed.load_state_dict(state)
    assert composed.deleted == [{1}, set()] and best.current == 3
    assert composed.state_dict() == state
    fresh = ComposedCheckpointingStrategy([KeepLastNCheckpoints(2)])
    fresh.load_state_dict({})  # a state from before these fields: nothing to restore
    assert fresh.deleted == [set()]


def test_composed_strategy_takes_a_state_with_either_part_missing():
    strategy = composed()
    strategy.load_state_dict({"children": [{}, {"current": 4}]})  # no deletions recorded: none assumed
    assert strategy.deleted == [set(), set()] and strategy.strategies[1].current == 4
    strategy.load_state_dict({"deleted": [[2], [3]]})  # no children's states: theirs stay
    assert strategy.deleted == [{2}, {3}] and strategy.strategies[1].current == 4


# --- the file checkpointer -------------------------------------------------------------------------
def test_model_n_is_a_plain_burn_module_record_and_resume_matches_an_uninterrupted_run(tmp_path):
    straight = fit(checkpointing_builder(tmp_path / "straight", 3, keep=1))
    kept = sorted(p.name for p in (tmp_path / "straight" / "checkpoint").iterdir())
    assert kept == ["model-3.mpk", "optim-3.mpk", "scheduler-3.mpk", "trainer-3.mpk"]  # delete took all of 1, 2

    fit(checkpointing_builder(tmp_path / "cut", 2))
    record = msgpack.unpackb((tmp_path / "cut" / "checkpoint" / "model-2.mpk").read_bytes(), raw=False)
    assert list(record) == ["metadata", "item", "_b"]
    assert "NamedMpkFileRecorder" in record["metadata"]["format"]
    weight = record["item"]["linear"]["weight"]
    assert list(record["item"]) == ["linear"] and list(weight) == ["id", "param"] and len(weight["id"]) == 13
    assert weight["param"]["shape"] == [4, 3] and weight["param"]["dtype"] == "F32"  # Linear stored [d_in, d_out]
    Classifier().load_file(tmp_path / "cut" / "checkpoint" / "model-2.mpk", DefaultRecorder())
    resumed = fit(checkpointing_builder(tmp_path / "cut", 3).checkpoint(2))
    assert same_weights(resumed, straight)
    assert same_weights(Classifier().load_file(tmp_path / "cut" / "checkpoint" / "model-3.mpk"), straight)


def lr_schedule() -> ComposedLrSchedulerConfig:
    return (ComposedLrSchedulerConfig().cosine(CosineAnnealingLrSchedulerConfig(1.0, 5))
            .linear(LinearLrSchedulerConfig(1e-2, 1e-3, 10)))


def fit_scheduled(b: LearnerBuilder) -> torch.nn.Module:
    """`fit` with `lr_schedule()` for the rate, its rates logged."""
    torch.manual_seed(0)
    return (b.metric_train_numeric(LearningRateMetric()).with_application_logger(False)
            .build(Classifier(), AdamConfig(), lr_schedule()).fit(loader(64, 16), loader(32, 16, seed=1)).model)


def test_scheduler_n_is_burns_lr_scheduler_record_and_a_resume_reads_it(tmp_path):
    """`checkpoint/scheduler-N` is Burn's record of the LR scheduler (burn-optim lr_scheduler/composed.rs:
    each part's record under its variant; cosine.rs `current_iter`, linear.rs `remaining_iters`), 4
    steps an epoch: after epoch 2, cosine stands at (8 - 1) % 6 and the linear has 11 - 8 left. A resume
    from it trains the uninterrupted run's weights; a record Burn wrote at another position (4 steps
    taken) moves the schedule there: epoch 3 starts at Burn's rate of step 5."""
    straight = fit_scheduled(checkpointing_builder(tmp_path / "straight", 3))
    fit_scheduled(checkpointing_builder(tmp_path / "cut", 2))
    path = tmp_path / "cut" / "checkpoint" / "scheduler-2.mpk"
    record = msgpack.unpackb(path.read_bytes(), raw=False)
    assert list(record) == ["metadata", "item", "_b"] and record["_b"] == []
    assert record["item"] == {"schedulers": [{"Cosine": (8 - 1) % 6}, {"Linear": 11 - 8}]}
    shutil.copytree(tmp_path / "cut", tmp_path / "burn")
    assert same_weights(fit_scheduled(checkpointing_builder(tmp_path / "cut", 3).checkpoint(2)), straight)

    record["item"] = {"schedulers": [{"Cosine": 3}, {"Linear": 7}]}  # Burn's record after 4 steps
    (tmp_path / "burn" / "checkpoint" / "scheduler-2.mpk").write_bytes(msgpack.packb(record, use_bin_type=True))
    fit_scheduled(checkpointing_builder(tmp_path / "burn", 3).checkpoint(2))
    logged = [float(line.split(",")[0])
              for line in (tmp_path / "burn" / "train" / "epoch-3" / "Learning_Rate.log").read_text().splitlines()]
    cosine = [0.5 * (1 + math.cos(i / 5 * math.pi)) for i in (4, 5, 0, 1)]  # current_iter of steps 5..8
    linear = [1e-3 - (1e-3 - 1e-2) / 10 * left for left in (6, 5, 4, 3)]  # remaining_iters of steps 5..8
    assert logged == pytest.approx([c * lin for c, lin in zip(cosine, linear)], rel=1e-12)


def test_a_recorder_with_its_own_extension_and_names_checkpoints_deletes_and_resumes_by_the_epoch_names(tmp_path):
    """Its `path_for` names what it is asked to save (`run-model.ckpt.burn`); the checkpointer's
    epoch files keep their names (`model-N.<its extension>`), which the trainer file lists, the
    deletions remove and a resume finds."""
    assert OwnNamesRecorder().save_module(Classifier(), tmp_path / "model").name == "run-model.ckpt.burn"
    straight = fit(checkpointing_builder(tmp_path / "straight", 3).with_file_checkpointer(OwnNamesRecorder()))
    cut = checkpointing_builder(tmp_path / "cut", 2, keep=1).with_file_checkpointer(OwnNamesRecorder())
    fit(cut)
    assert sorted(p.name for p in (tmp_path / "cut" / "checkpoint").iterdir()) == [
        f"{kind}-2.ckpt.burn" for kind in ("model", "optim", "scheduler", "trainer")]
    resumed = fit(checkpointing_builder(tmp_path / "cut", 3).with_file_checkpointer(OwnNamesRecorder()).checkpoint(2))
    assert same_weights(resumed, straight)


def test_checkpointer_logs_each_file_it_removes(tmp_path, caplog):
    builder = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(2).progress_bar(False)
               .with_application_logger(False).with_file_checkpointer(DefaultRecorder())
               .with_checkpointing_strategy(KeepLastNCheckpoints(1)).devices(["cpu"]))
    learner = builder.build(Classifier(), SgdConfig(), 0.01)
    preempted = tmp_path / "checkpoint" / "preempted-3.mpk"
    preempted.parent.mkdir(parents=True)
    write_checkpoint(preempted, 3)
    with caplog.at_level(logging.DEBUG, logger="burnlike.train"):
        learner.fit(loader(32, 16), loader(16, 16))
    levels = {r.getMessage(): r.levelno for r in caplog.records}
    removals = [f"removing checkpoint {tmp_path / 'checkpoint' / f'{kind}-1.mpk'}"
                for kind in ("trainer", "scheduler", "optim", "model")]  # trainer first: never a half epoch
    removals.append(f"removing {preempted}: the checkpoint of step 4 supersedes it")
    messages = [r.getMessage() for r in caplog.records]
    assert [m for m in messages if m in removals] == removals
    assert {levels[m] for m in removals} == {logging.DEBUG}  # housekeeping: not on a console
    assert sorted(p.name for p in (tmp_path / "checkpoint").iterdir()) == [
        "model-2.mpk", "optim-2.mpk", "scheduler-2.mpk", "trainer-2.mpk"]


@pytest.mark.parametrize(("direction", "kept"), [(Direction.LOWEST, [2]), (Direction.HIGHEST, [4])])
def test_checkpointer_keeps_the_earliest_best_epoch_file(tmp_path, direction, kept):
    strategy = MetricCheckpointingStrategy(LossMetric(), direction=direction)
    scripted_run(tmp_path, [0.6, 0.4, 0.4, 0.9, 0.5, 0.9], strategy=strategy)
    files = sorted(int(p.name.split("-")[1].split(".")[0]) for p in (tmp_path / "checkpoint").glob("model-*.mpk"))
    assert files == kept


def test_a_nan_first_epoch_neither_stops_the_default_checkpointer_nor_stays_behind(tmp_path):
    builder = (LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(4).progress_bar(False)
               .with_application_logger(False).with_file_checkpointer(DefaultRecorder()))
    learner = builder.build(ScriptedValidLoss([NAN, 0.5, 0.6, 0.7]), SgdConfig(), 0.01)
    learner.fit(loader(32, 32), loader(32, 32, seed=1))
    assert learner.trainer.current_epoch == 4
    kept = sorted(p.name for p in (tmp_path / "checkpoint").glob("model-*.mpk"))
    assert kept == ["model-2.mpk", "model-3.mpk", "model-4.mpk"]  # the best valid loss (2) and the last two


def test_an_epoch_checkpoint_supersedes_the_preempted_ones_before_it(tmp_path, caplog):
    """A preempted-S file is only needed until a complete checkpoint of a later step exists: then
    it is removed, and the removal logged (else every preemption of a long run leaves one behind);
    a later one stays."""
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    for name in ("preempted-2.mpk", "preempted-4.mpk", "preempted-99999.mpk", "preempted-x.mpk", "preempted-3.json"):
        (folder / name).write_bytes(b"not read: removal goes by the step in the name")
    with caplog.at_level(logging.DEBUG, logger="burnlike.train"):
        fit(checkpointing_builder(tmp_path, 1))  # one epoch of 4 steps (64 samples, batch 16)
    left = sorted(p.name for p in folder.iterdir() if p.name.startswith("preempted"))
    assert left == ["preempted-3.json", "preempted-99999.mpk", "preempted-x.mpk"]
    for step in (2, 4):
        assert f"removing {folder / f'preempted-{step}.mpk'}: the checkpoint of step 4 supersedes it" in \
            train_messages(caplog)


def test_checkpointer_removes_stale_temps_when_a_run_starts(tmp_path: Path) -> None:
    checkpointer = FileCheckpointer(tmp_path, "mpk", KeepLastNCheckpoints(2))
    directory = checkpointer.path(1).parent
    directory.mkdir(parents=True)
    stale = temp_of(checkpointer.path(3), dead_pid())
    live = temp_of(checkpointer.path(3), os.getpid())

    class Trainer:  # the one attribute setup reads
        is_global_zero = True

    checkpointer.setup(Trainer(), None, "fit")  # type: ignore[arg-type]
    assert not stale.exists() and live.exists()


# --- the newest checkpoint -------------------------------------------------------------------------
def test_newest_checkpoint_goes_by_the_step_inside_the_file(tmp_path):
    assert newest_checkpoint(tmp_path, "mpk") is None  # no checkpoint folder
    fit(cpu_builder(tmp_path))  # trainer-1 (step 4), trainer-2 (step 8), model-1, model-2 …
    folder = tmp_path / "checkpoint"
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-2.mpk"
    (folder / "trainer-2.mpk").rename(folder / "trainer-0.mpk")  # the name's number is not read
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-0.mpk"
    (folder / "trainer-9.mpk").write_bytes(b"not a record")  # unreadable: skipped
    shutil.copy(folder / "model-2.mpk", folder / "model-7.mpk")  # a module record has no step: skipped
    shutil.copy(folder / "trainer-0.mpk", folder / "trainer-5.json")  # another format's extension
    assert newest_checkpoint(str(tmp_path), "mpk") == folder / "trainer-0.mpk"
    # a preempted copy of the same step loses to the epoch checkpoint; a later step wins
    shutil.copy(folder / "trainer-0.mpk", folder / "preempted-99.mpk")
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-0.mpk"
    (folder / "trainer-0.mpk").unlink()
    assert newest_checkpoint(tmp_path, "mpk") == folder / "preempted-99.mpk"
    (folder / "preempted-99.mpk").unlink()
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-1.mpk"


def test_newest_checkpoint_reads_only_the_asked_format_and_old_single_file_checkpoints(tmp_path):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    assert newest_checkpoint(tmp_path, "mpk") is None  # a folder with nothing in it
    write_checkpoint(folder / "trainer-1.mpk", 4)
    write_checkpoint(folder / "trainer-3.json", 12, PrettyJsonFileRecorder())  # another recorder's run
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-1.mpk"
    write_checkpoint(folder / "model-2.mpk", 8)  # before per-epoch files: the whole checkpoint in model-N
    assert newest_checkpoint(tmp_path, "mpk") == folder / "model-2.mpk"
    write_checkpoint(folder / "optim-3.mpk", 99)  # not a kind that holds a resumable checkpoint
    assert newest_checkpoint(tmp_path, "mpk") == folder / "model-2.mpk"


def test_newest_checkpoint_skips_a_checkpoint_whose_step_is_not_an_integer(tmp_path):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    write_checkpoint(folder / "trainer-1.mpk", 4)
    write_checkpoint(folder / "trainer-2.mpk", "8")
    DefaultRecorder().record({"global_step": 50}, folder / "trainer-3.mpk", exact_path=True)  # not a checkpoint
    DefaultRecorder().record([1, 2, 3], folder / "trainer-4.mpk", exact_path=True)
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-1.mpk"


def test_newest_checkpoint_reads_a_files_kind_up_to_its_first_dash(tmp_path):
    """`trainer-3-copy.mpk` is a trainer checkpoint (the kind is the name up to the first dash, the
    step comes from inside the file), while `old-trainer-9.mpk` is no kind at all."""
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    write_checkpoint(folder / "trainer-3.mpk", 12)
    write_checkpoint(folder / "old-trainer-9.mpk", 99)
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-3.mpk"
    write_checkpoint(folder / "trainer-3-copy.mpk", 40)
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-3-copy.mpk"


# --- early stopping: the strategy and its callback -------------------------------------------------
def test_early_stopping_has_burns_semantics():
    # n epochs without a strict improvement, counted in epochs since the best
    assert stopping({1: 0.5, 2: 0.6, 3: 0.4, 4: 0.4, 5: 0.45}, 2) == [5]
    # a missing value never stops; epochs without one count too (Lightning's patience counts checks)
    assert stopping({2: 0.5, 4: 0.6}, 2) == [4]
    # NaN never improves but doesn't stop by itself (Lightning's check_finite would stop at once)
    assert stopping({1: 0.5, 2: float("nan")}, 2) == []
    # the metric's own direction: accuracy going up is an improvement
    assert stopping({1: 50.0, 2: 60.0, 3: 70.0}, 1, AccuracyMetric()) == []


def test_nan_epochs_count_towards_the_stop_as_in_burn():
    """burn-train/src/learner/early_stopping.rs (v0.21.0): `current_value < self.best_value` is false for
    NaN, so a NaN epoch is no improvement and counts towards `NoImprovementSince { n_epochs }`: two NaN
    epochs after the best stop a run with n_epochs = 2 (the docs said a NaN never stops: it does)."""
    assert stopping({1: 0.5, 2: float("nan"), 3: float("nan")}, 2) == [3]
    assert stopping({1: 0.5, 2: float("nan"), 3: 0.4, 4: float("nan")}, 2) == []


def test_early_stopping_counts_from_epoch_one_when_no_value_ever_improves():
    """NaN never improves: the best remains Burn's initial epoch 1, whichever way the metric is named."""
    for strategy, store in ((MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST), store_of({1: NAN, 2: NAN})),
                            (MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(1)),
                             loss_store({1: NAN, 2: NAN}))):
        assert strategy.should_stop(1, store) is False
        assert strategy.should_stop(2, store) is True  # one epoch without improvement since epoch 1


def test_early_stopping_uses_the_registered_metrics_direction_and_logs_its_decisions(caplog):
    store = loss_store({1: 0.5, 2: 0.6})
    for strategy in (MetricEarlyStoppingStrategy("Loss"),  # no direction given: the registered Loss metric's (lowest)
                     MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(1))):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="burnlike.train"):
            assert strategy.should_stop(1, store) is False
            assert strategy.should_stop(2, store) is True
            assert strategy.should_stop(3, store) is False  # no value for epoch 3
        assert [r.getMessage() for r in caplog.records] == [
            "stopping: valid/Loss has not improved since epoch 1 (0.5), now 0.6",
            "early stopping: no valid/Loss value for epoch 3"]


def test_stopping_condition_needs_at_least_one_epoch():
    for bad in (0, -1):
        with pytest.raises(ValueError, match="n_epochs"):
            MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(bad))


def test_warmup_epochs_take_zero_and_refuse_booleans_negatives_and_fractions():
    strategy = MetricEarlyStoppingStrategy(LossMetric())
    assert strategy.with_warmup_epochs(0).warmup_epochs == 0
    for bad in (True, -1, 1.5, "2"):
        with pytest.raises(ValueError, match=rf"^with_warmup_epochs: expected None or an integer >= 0, got {bad!r}$"):
            strategy.with_warmup_epochs(bad)


def test_early_stopping_state_survives_a_resume():
    store = MetricStore()
    store.register([LossMetric()])
    first = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition(2))
    for epoch, loss in ((1, 0.5), (2, 0.4)):
        store.record(Split.VALID, epoch, "Loss", loss)
        first.should_stop(epoch, store)
    callback = first.to_callback()
    resumed = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition(2)).to_callback()
    resumed.load_state_dict(callback.state_dict())
    for epoch, loss in ((3, 0.45), (4, 0.41)):
        store.record(Split.VALID, epoch, "Loss", loss)
    assert not resumed.strategy.should_stop(3, store) and resumed.strategy.should_stop(4, store)


def test_early_stopping_callback_restores_the_epoch_it_stopped_at():
    callback = MetricEarlyStoppingStrategy(LossMetric()).to_callback()
    callback.load_state_dict({"strategy": {"best_epoch": 2, "best_value": 0.5}, "stopped_epoch": 4})
    assert callback.stopped_epoch == 4 and callback.strategy.best_epoch == 2
    assert callback.state_dict() == {"strategy": {"best_epoch": 2, "best_value": 0.5}, "stopped_epoch": 4}


def test_the_early_stopping_callback_watches_the_strategys_metric():
    callback = MetricEarlyStoppingStrategy(LossMetric()).to_callback()
    assert callback.monitor == "valid/Loss"
    assert callback.state_key == "MetricEarlyStopping{'monitor': 'valid/Loss', 'strategy': 'burn'}"
    # Lightning's own checks are off, as its fields read: the decision is Burn's rule (a missing
    # value never stops, a NaN counts as no improvement), taken at the train epoch's end
    assert (callback.strict, callback.check_finite, callback._check_on_train_epoch_end) == (False, False, True)


def test_two_early_stoppings_keep_their_states_apart():
    a = MetricEarlyStopping(MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST))
    b = MetricEarlyStopping(MetricEarlyStoppingStrategy("Accuracy", direction=Direction.HIGHEST))
    assert a.state_key != b.state_key and "valid/Loss" in a.state_key


# --- early stopping in a run -----------------------------------------------------------------------
def test_early_stopping_stops_without_improvement(tmp_path):
    stop = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(1))
    learner = metrics_builder(tmp_path, 10).early_stopping(stop).build(Classifier(), AdamConfig(), 0.0)  # lr 0: no progress
    learner.fit(loader(64, 32), loader(64, 32))
    assert learner.trainer.current_epoch == 2  # best at epoch 1, no strict improvement in epoch 2 → stop


@pytest.mark.parametrize(("direction", "epochs"), [(Direction.LOWEST, 2), (Direction.HIGHEST, 4)])
def test_early_stopping_stops_at_the_first_epoch_not_better_in_its_direction(tmp_path, direction, epochs):
    # lowest: best at 1, epoch 2 is worse -> stop after 2; highest: rises until 3, falls at 4 -> stop after 4
    assert scripted_run(tmp_path, [0.5, 0.6, 0.7, 0.65, 0.8, 0.9], direction=direction, patience=1) == epochs


@pytest.mark.parametrize(("patience", "epochs"), [(1, 3), (2, 4), (3, 8)])
def test_early_stopping_patience_counts_epochs_without_strict_improvement(tmp_path, patience, epochs):
    # best 0.8 at epoch 2; epoch 3 ties it (not an improvement), 4 is worse, 5 improves (0.7), then
    # 6 and 7 are worse and 8 ties 0.7: three epochs without a strict improvement
    script = [1.0, 0.8, 0.8, 0.9, 0.7, 0.75, 0.75, 0.7, 0.6, 0.5]
    assert scripted_run(tmp_path, script, patience=patience) == epochs


def test_without_early_stopping_a_run_trains_every_epoch(tmp_path):
    assert scripted_run(tmp_path, [0.5, 0.6, 0.7]) == 3


def test_early_stopping_direction_holds_in_a_learning_run(tmp_path):
    """A real run (lr > 0): the validation loss falls every epoch, so `lowest` never stops and
    `highest` stops as soon as it has fallen once."""
    def run(path, direction):
        torch.manual_seed(0)
        stop = MetricEarlyStoppingStrategy(LossMetric(), direction=direction,
                                           condition=StoppingCondition.no_improvement_since(1))
        learner = (LearnerBuilder(path).metric_valid_numeric(LossMetric()).num_epochs(4).progress_bar(False)
                   .with_application_logger(False).early_stopping(stop).build(Classifier(), AdamConfig(), 0.05))
        learner.fit(loader(64, 32), loader(64, 32, seed=1))
        return learner.trainer.current_epoch, list(read_epochs(path, "valid", "Loss").values())

    epochs, losses = run(tmp_path / "lowest", Direction.LOWEST)
    assert epochs == 4 and all(b < a for a, b in zip(losses, losses[1:])), losses
    epochs, losses = run(tmp_path / "highest", Direction.HIGHEST)
    assert epochs == 2 and losses[1] < losses[0] and not math.isnan(losses[1])


def test_early_stopping_waits_out_the_warmup_epochs(tmp_path):
    def epochs_run(warmup):
        stop = MetricEarlyStoppingStrategy(AccuracyMetric(), direction=Direction.HIGHEST, split=Split.VALID,
                                           condition=StoppingCondition.no_improvement_since(1))
        learner = (LearnerBuilder(tmp_path / str(warmup)).metrics(AccuracyMetric()).num_epochs(8).devices(["cpu"])
                   .progress_bar(False).early_stopping(stop.with_warmup_epochs(warmup))
                   .build(Classifier(), AdamConfig(), 0.0))  # lr 0: never improves after epoch 1
        learner.fit(loader(32, 32), loader(32, 32))
        return learner.trainer.current_epoch

    assert epochs_run(None) == 2 and epochs_run(3) == 4
    with pytest.raises(ValueError, match="warmup"):
        MetricEarlyStoppingStrategy(LossMetric()).with_warmup_epochs(-1)


def test_early_stopping_on_a_train_metric_sees_the_epoch_just_finished(tmp_path):
    # constant lr: no strict improvement after epoch 1, so Burn stops after epoch 2
    stop = MetricEarlyStoppingStrategy(LearningRateMetric(), direction=Direction.LOWEST, split=Split.TRAIN,
                                       condition=StoppingCondition.no_improvement_since(1))
    learner = (LearnerBuilder(tmp_path).metric_train(LearningRateMetric()).num_epochs(5).progress_bar(False)
               .early_stopping(stop).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(64, 32))
    assert learner.trainer.current_epoch == 2 and learner.trainer.early_stopping_callback is not None
    assert stop.best_epoch == 1


def test_early_stopping_decides_after_each_train_epoch_even_without_validation(tmp_path):
    learner, strategy = early_stopping_run(tmp_path, check_val_every_n_epoch=3)
    callback = learner.trainer.early_stopping_callback
    assert isinstance(callback, MetricEarlyStopping)
    assert callback.monitor == "train/Loss"
    assert learner.trainer.current_epoch == 2  # stopped after epoch 2, not at the validation of epoch 3
    assert callback.stopped_epoch == 1  # Lightning counts from 0
    state = callback.state_dict()
    assert state == {"strategy": {"best_epoch": 1, "best_value": 1.0}, "stopped_epoch": 1}
    again = MetricEarlyStopping(MetricEarlyStoppingStrategy("Loss", direction=Direction.LOWEST, split=Split.TRAIN))
    again.load_state_dict(state)
    assert again.stopped_epoch == 1 and again.strategy.best_value == 1.0


def test_train_metric_early_stopping_with_patience_two_stops_between_validations(tmp_path):
    stop = MetricEarlyStoppingStrategy(LossMetric(), split=Split.TRAIN, condition=StoppingCondition(2))
    learner = (LearnerBuilder(tmp_path).metrics(LossMetric()).devices(["cpu"]).num_epochs(8).progress_bar(False)
               .with_application_logger(False).early_stopping(stop).trainer_kwargs(check_val_every_n_epoch=2)
               .build(Classifier(), AdamConfig(), 0.0))  # lr 0: the train loss never improves after epoch 1
    learner.fit(loader(32, 16), loader(32, 16))
    assert learner.trainer.current_epoch == 3  # stopped after epoch 3 (3 - 1 >= 2), not at a validation epoch
    callback = learner.trainer.early_stopping_callback
    assert callback.stopped_epoch == 2  # Lightning's 0-based epoch of the stop


def test_early_stopping_sits_out_a_fast_dev_run(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        learner, strategy = early_stopping_run(tmp_path, fast_dev_run=True)
    assert strategy.best_value is None  # never consulted
    assert learner.trainer.early_stopping_callback.stopped_epoch == 0
    assert not [r for r in caplog.records if "stopping" in r.getMessage()]


# --- Burn's spellings ---------------------------------------------------------------------------------
def test_burns_early_stopping_call_ports_name_for_name():
    """burn-train/src/learner/early_stopping.rs and metric/store/base.rs (v0.21.0):
    `MetricEarlyStoppingStrategy::new(&LossMetric::new(), Aggregate::Mean, Direction::Lowest, Split::Valid,
    StoppingCondition::NoImprovementSince { n_epochs: 1 })`, in Python with the same names."""
    strategy = MetricEarlyStoppingStrategy(LossMetric(), Aggregate.Mean, Direction.Lowest, Split.Valid,
                                           StoppingCondition.NoImprovementSince(n_epochs=1))
    same = MetricEarlyStoppingStrategy(LossMetric(), Aggregate.MEAN, Direction.LOWEST, Split.VALID,
                                       StoppingCondition.no_improvement_since(1))
    assert (strategy.aggregate, strategy.direction, strategy.split, strategy.condition) == \
        (same.aggregate, same.direction, same.split, same.condition)
    store = loss_store({1: 0.5, 2: 0.6})
    assert not strategy.should_stop(1, store) and strategy.should_stop(2, store)


def test_checkpointing_actions_have_burns_variant_names():
    """burn-train/src/checkpoint/strategy/base.rs (v0.21.0): `CheckpointingAction::{Save, Delete(epoch)}`;
    a strategy written with them drives the checkpointer as burnlike's `Save()`/`Delete(n)`."""
    assert CheckpointingAction.Save == Save() and isinstance(CheckpointingAction.Save, CheckpointingAction)
    assert CheckpointingAction.Delete(3) == Delete(3) and isinstance(Delete(3), CheckpointingAction)
    assert KeepLastNCheckpoints(1).checkpointing(2, MetricStore()) == [CheckpointingAction.Save,
                                                                        CheckpointingAction.Delete(1)]


def test_checkpoint_path_names_the_model_file_by_default(tmp_path):
    assert checkpoint_path(tmp_path, 3, "mpk") == tmp_path / "checkpoint" / "model-3.mpk"


def test_newest_checkpoint_reads_a_sharded_checkpoints_step_from_its_training_state(tmp_path):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    write_checkpoint(folder / "trainer-2.mpk", 8)
    sharded = folder / "trainer-3.mpk"  # a folder: the shards, their metadata, the training state
    sharded.mkdir()
    (sharded / f"{METADATA}.mpk").write_bytes(b"")
    write_training_state(sharded, {"state_dict": {}, "global_step": 12}, DefaultRecorder())
    assert newest_checkpoint(tmp_path, "mpk") == sharded
    write_training_state(sharded, {"state_dict": {}, "global_step": "12"}, DefaultRecorder())  # not a step
    assert newest_checkpoint(tmp_path, "mpk") == folder / "trainer-2.mpk"


def test_a_sharded_run_saves_each_epochs_whole_model_as_burns_model_record(tmp_path, one_rank_group):
    learner = (LearnerBuilder(tmp_path).with_file_checkpointer(DefaultRecorder()).num_epochs(1).progress_bar(False)
               .with_application_logger(False).trainer_kwargs(strategy="fsdp", accelerator="cpu", devices=1)
               .build(Classifier(), AdamConfig(), 1e-2))
    trained = learner.fit(loader(32, 16)).model
    restored = Classifier().load_file(tmp_path / "checkpoint" / "model-1.mpk", DefaultRecorder())
    assert same_weights(restored, trained)
