"""`burnlike.train.learner`: what `LearnerBuilder(...).build(...).fit(...)` leaves behind, as Burn's
learner does: the `epoch-N/<Metric>.log` files (one `value,count` line per batch) that parse back to
the logged epoch values, the experiment log, the summary table and the kept checkpoints, both taken
from the run's metric store rather than re-read from files; the metrics plot; and resuming, from
`checkpoint("last")` (naming the folder when nothing is there) or from a single-file `model-N`
checkpoint of an older layout; a checkpoint a strategy can't load named in one line; and how a fit
under ddp_spawn ends when one of its ranks stops."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.strategies import SingleDeviceStrategy
from lightning.pytorch.trainer.states import TrainerStatus
from torch import nn
from torch.multiprocessing.spawn import ProcessExitedException

from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import DefaultRecorder, load_checkpoint
from burnlike.train import (
    FileApplicationLoggerInstaller,
    LearnerSummary,
    LearningResult,
    Split,
    TrainingResult,
)
from burnlike.train.learner import CheckpointMoveError, Learner, TearDownSpawnedRanks
from burnlike.train.logger import read_epochs, read_metric_log
from burnlike.train.metric import LearningRateMetric, LossMetric
from burnlike.train.metric.store import EpochEntry
from burnlike.train.preemption import Preempted
from burnlike.train.process_group import RankStopped
from burnlike.train.renderer import CliMetricsRenderer
from tests.helpers.fit import checkpointing_builder, fit, metrics_builder, same_weights
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import Seen, seen_loader, valid_loss_builder


class CorruptLogs:
    """A store listener after the file logger: leaves every `.log` the run wrote unreadable."""

    def __init__(self, artifact_dir: Path) -> None:
        self.artifact_dir = artifact_dir

    def __call__(self, split: Split, epoch: int, entries: dict[str, EpochEntry]) -> None:
        for path in (self.artifact_dir / split.value / f"epoch-{epoch}").glob("*.log"):
            path.write_text("not,a,metric,log\n")


# --- a fit's artifacts -----------------------------------------------------------------------------
def test_fit_writes_burn_layout_and_logs_parse_back(tmp_path, capsys):
    torch.manual_seed(0)
    learner = metrics_builder(tmp_path, 3).metric_train(LearningRateMetric()).summary().build(Classifier(), AdamConfig(), 5e-2)
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


def test_the_experiment_log_says_what_is_fitted_and_where_training_finished(tmp_path):
    learner = valid_loss_builder(tmp_path).with_application_logger(True).build(Classifier(), SgdConfig(), 0.01)
    learner.fit(loader(32, 16), loader(16, 16))
    lines = (tmp_path / "experiment.log").read_text().splitlines()
    assert [line for line in lines if "fitting" in line][0].endswith("fitting Classifier for 1 epochs")  # no resume
    assert any(line.endswith("training finished at epoch 1") for line in lines)


class CountingInstaller:
    """A user's `ApplicationLoggerInstaller` (Burn's trait: `install()`), writing to its own file."""

    def __init__(self, path: Path) -> None:
        self.installs = 0
        self.inner = FileApplicationLoggerInstaller(path)

    def install(self) -> logging.Handler:
        self.installs += 1
        return self.inner.install()


def test_with_application_logger_takes_burns_installer(tmp_path):
    """burn-train/src/learner/application_logger.rs and supervised/paradigm.rs (v0.21.0):
    `with_application_logger(Some(Box::new(installer)))` installs that logger at launch (here: its own
    file, not experiment.log); `None` installs none; a failing install warns and training goes on."""
    installer = CountingInstaller(tmp_path / "logs" / "mine.log")
    learner = valid_loss_builder(tmp_path).with_application_logger(installer).build(Classifier(), SgdConfig(), 0.01)
    assert learner.application_logger is installer
    learner.fit(loader(32, 16), loader(16, 16))
    assert installer.installs == 1 and "training finished at epoch 1" in (tmp_path / "logs" / "mine.log").read_text()
    assert not (tmp_path / "experiment.log").exists()
    off = valid_loss_builder(tmp_path / "off").with_application_logger(None).build(Classifier(), SgdConfig(), 0.01)
    assert off.application_logger is False
    off.fit(loader(16, 16))
    assert not (tmp_path / "off" / "experiment.log").exists()

    class Broken:
        def install(self) -> None:
            raise RuntimeError("no file system")

    broken = valid_loss_builder(tmp_path / "broken").with_application_logger(Broken()).build(
        Classifier(), SgdConfig(), 0.01)
    with_warning = logging.getLogger("burnlike.train")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    with_warning.addHandler(handler)
    try:
        broken.fit(loader(16, 16))
    finally:
        with_warning.removeHandler(handler)
    assert any(r.getMessage() == "Failed to install the experiment logger: no file system" for r in records)


def test_with_application_logger_refuses_what_is_no_installer(tmp_path):
    with pytest.raises(TypeError, match=r"^with_application_logger: expected an ApplicationLoggerInstaller "
                                        r"\(an object with install\(\), such as FileApplicationLoggerInstaller\(path\)\), "
                                        r"None, True or False, got str$"):
        valid_loss_builder(tmp_path).with_application_logger("experiment.log")


def test_summary_and_checkpoints_come_from_the_store_not_the_log_files(tmp_path, capsys):
    torch.manual_seed(0)
    learner = metrics_builder(tmp_path, 3).with_file_checkpointer(DefaultRecorder()).summary().build(Classifier(), AdamConfig(), 5e-2)
    store = learner.module.store
    store.add_listener(CorruptLogs(tmp_path))
    result = learner.fit(loader(256, 32), loader(128, 32, seed=1))
    with pytest.raises(ValueError, match="Accuracy.log:1"):  # what the run wrote can't be read back
        LearnerSummary.from_dir(tmp_path, ["Accuracy"], ["Accuracy"])
    for split in (Split.TRAIN, Split.VALID):
        for name in ("Accuracy", "Loss"):
            row = result.summary.get(split.value, name)
            assert row.epochs == store.epochs(split, name) and len(row.epochs) == 3
            assert row.max_value == max(store.epochs(split, name).values())
    assert "Total Epochs: 3" in capsys.readouterr().out
    best = store.find_epoch("Loss", Split.VALID)
    kept = sorted(int(p.stem.split("-")[1]) for p in (tmp_path / "checkpoint").glob("model-*.mpk"))
    assert kept == sorted({2, 3, best})  # Burn's default: the last two plus the best valid loss


# --- resuming --------------------------------------------------------------------------------------
def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "burnlike.train" and r.levelno >= logging.WARNING]


def test_last_without_checkpoints_trains_from_the_start_and_says_so(tmp_path, caplog):
    """A scheduler's requeue runs the first command again: `last` on a run with nothing saved yet
    is a first start, not an error."""
    straight = fit(checkpointing_builder(tmp_path / "straight", 2))
    with caplog.at_level(logging.WARNING, logger="burnlike.train"):
        first = fit(checkpointing_builder(tmp_path / "run", 2).checkpoint("last"))
    assert same_weights(straight, first)
    assert warnings_of(caplog) == [f"checkpoint('last'): no checkpoint in {tmp_path / 'run' / 'checkpoint'} yet; "
                               "training from the start"]


def test_last_skips_a_truncated_newest_checkpoint_naming_it_and_the_one_it_resumes_from(tmp_path, caplog):
    straight = fit(checkpointing_builder(tmp_path / "straight", 3))
    fit(checkpointing_builder(tmp_path / "run", 2))
    folder = tmp_path / "run" / "checkpoint"
    newest = folder / "trainer-2.mpk"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])  # a save cut short
    with caplog.at_level(logging.WARNING, logger="burnlike.train"):
        resumed = fit(checkpointing_builder(tmp_path / "run", 3).checkpoint("last"))
    [warning] = warnings_of(caplog)
    assert warning.startswith(f"checkpoint('last'): {newest} can't be read (")
    assert warning.endswith(f"); skipped, resuming from {folder / 'trainer-1.mpk'}")
    assert same_weights(straight, resumed)  # epochs 2 and 3 trained again from epoch 1's checkpoint


def test_a_single_file_model_n_checkpoint_resumes_to_the_uninterrupted_weights(tmp_path):
    straight = fit(checkpointing_builder(tmp_path / "straight", 3))
    torch.manual_seed(0)
    learner = checkpointing_builder(tmp_path / "run", 2).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16), loader(32, 16, seed=1))
    old = tmp_path / "old" / "checkpoint" / "model-2.mpk"
    learner.trainer.save_checkpoint(old)  # what FileCheckpointer wrote before: the whole Lightning dict
    assert "optimizer_states" in load_checkpoint(old)
    assert same_weights(fit(checkpointing_builder(tmp_path / "old", 3).checkpoint(2)), straight)


def test_a_learner_built_by_hand_prints_no_summary_unless_asked(tmp_path):
    built = metrics_builder(tmp_path).build(Classifier(), SgdConfig(), 0.1)
    assert Learner(built.trainer, built.module, tmp_path, {}).show_summary is False


def test_resuming_without_a_file_checkpointer_says_what_is_missing(tmp_path):
    learner = metrics_builder(tmp_path).checkpoint(1).build(Classifier(), SgdConfig(), 0.1)
    with pytest.raises(ValueError, match=r"^checkpoint\(epoch\) needs with_file_checkpointer\(recorder\): "
                                         r"there is nothing to resume from$"):
        learner.resume_path()


NOT_RESUMABLE = "your dataloader is not resumable"


def resume_warnings(tmp_path: Path, make_loader, step: int) -> list[str]:
    """Preempt a 3-epoch fit (4 batches an epoch) after `step`, resume it: Lightning's resumability warnings."""
    import signal
    import warnings

    from burnlike.train.preemption import Preempted
    from tests.helpers.fit import SignalAfter, cpu_builder

    def run(builder):
        torch.manual_seed(0)
        return builder.build(Classifier(), AdamConfig(), 1e-2).fit(make_loader(64), make_loader(32))

    with pytest.raises(Preempted):
        run(cpu_builder(tmp_path, 3).callback(SignalAfter(step, signal.SIGUSR1)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(cpu_builder(tmp_path, 3).checkpoint("last"))
    return [str(w.message) for w in caught if NOT_RESUMABLE in str(w.message)]


@pytest.mark.parametrize("step", [1, 6, 7])  # mid-epoch 1; epoch 2's third batch; its last (then its validation)
def test_a_resume_that_continues_the_loader_exactly_gets_no_resumability_warning(tmp_path, step):
    from burnlike.data import DataLoaderBuilder
    from tests.helpers.fit import StackingBatcher
    from tests.helpers.toy import blobs

    def builder_loader(n: int):
        return DataLoaderBuilder(StackingBatcher()).batch_size(16).shuffle(0).build(blobs(n))

    assert resume_warnings(tmp_path, builder_loader, step) == []


def test_a_plain_loader_resumed_mid_epoch_keeps_lightnings_warning(tmp_path):
    """Its order after the resume is its own: burnlike skips the batches trained, Lightning's warning stands."""
    assert len(resume_warnings(tmp_path, lambda n: loader(n, 16), 5)) == 1


# --- valid_every / num_iterations: epochs of a continuing loader ---------------------------------------------
def seen_fit(root, loader, checkpoint=None, iterations=12, every=3):
    builder = (checkpointing_builder(root, 1, keep=10).metric_train_numeric(LossMetric())
               .with_application_logger(False).devices(["cpu"]).num_iterations(iterations).valid_every(every))
    if checkpoint is not None:
        builder.checkpoint(checkpoint)
    torch.manual_seed(0)
    model = Seen()
    result = builder.build(model, SgdConfig(), 0.1).fit(loader, seen_loader(4, shuffle=None))
    return model, result


@pytest.mark.parametrize("plain", [False, True], ids=["DataLoaderBuilder", "torch DataLoader"])
def test_valid_every_trains_each_epoch_on_the_next_batches_of_one_stream(tmp_path, plain):
    """12 iterations, validation every 3, over 20 items in batches of 4 (5 per pass): 4 epochs that
    continue the stream (one pass, then the next in its own order), not 4 restarts of the loader."""
    reference = seen_loader(20, plain=plain)
    stream = [b.x[:, 0].long().tolist() for _ in range(3) for b in reference]  # three passes of one loader
    loader = seen_loader(20, plain=plain)
    model, result = seen_fit(tmp_path, loader)
    assert model.trained == stream[:12]
    assert sorted(x for batch in model.trained[:5] for x in batch) == list(range(20))  # a whole pass, no repeat
    assert result.trainer.current_epoch == 4 and len(model.validated) == 4
    for epoch in range(1, 5):
        lines = (tmp_path / "train" / f"epoch-{epoch}" / "Loss.log").read_text().splitlines()
        assert len(lines) == 3  # one per batch of the epoch (Burn's `value,count` lines)
    assert sorted(p.name for p in (tmp_path / "checkpoint").glob("model-*")) == [f"model-{e}.mpk" for e in range(1, 5)]


def test_a_run_resumed_from_an_epoch_of_a_stream_trains_on_the_uninterrupted_runs_batches(tmp_path):
    whole, _ = seen_fit(tmp_path / "whole", seen_loader(20))
    seen_fit(tmp_path / "part", seen_loader(20), iterations=6)  # epochs 1 and 2 of the same run
    resumed, _ = seen_fit(tmp_path / "part", seen_loader(20), checkpoint=2)
    assert resumed.trained == whole.trained[6:]
    assert same_weights(resumed, whole)


class OwnLoading(SingleDeviceStrategy):
    """A strategy that reads checkpoints its own way (as DeepSpeed's does), not through the plugin."""

    def load_checkpoint(self, checkpoint_path, weights_only=None):  # pragma: no cover - refused before
        raise AssertionError("never called: the learner refuses the move first")


def test_a_checkpoint_a_strategy_cant_load_is_named_in_one_line_with_what_works(tmp_path):
    fit(checkpointing_builder(tmp_path / "run", 1))
    learner = (checkpointing_builder(tmp_path / "run", 2).checkpoint("last")
               .trainer_kwargs(strategy=OwnLoading(device="cpu")).build(Classifier(), AdamConfig(), 1e-2))
    with pytest.raises(CheckpointMoveError) as refused:
        learner.resume_path()
    one_file = tmp_path / "run" / "checkpoint" / "trainer-1.mpk"
    assert str(refused.value).startswith(f"{one_file} is a one-file checkpoint in the recorder's format, which "
                                         "OwnLoading can't load")
    assert "trainer=cpu, trainer=ddp or trainer=fsdp" in str(refused.value) and "\n" not in str(refused.value)
    sharded = tmp_path / "sharded" / "checkpoint" / "trainer-1.mpk"  # a sharded checkpoint's folder, two ranks
    sharded.mkdir(parents=True)
    for name in (".metadata.mpk", "shard-0.mpk", "shard-1.mpk"):
        (sharded / name).write_bytes(b"")
    learner.artifact_dir, learner.checkpoint = tmp_path / "sharded", 1
    with pytest.raises(CheckpointMoveError, match=re.escape(
            f"{sharded} is a sharded checkpoint (2 shards) in the recorder's format, which OwnLoading can't load")) \
            as refused:
        learner.resume_path()
    assert str(refused.value).endswith(f"or gather it into one file first: burnlike consolidate {sharded} --checkpoint")


def test_plain_lightning_strategies_load_any_checkpoint_through_the_recorder(tmp_path):
    fit(checkpointing_builder(tmp_path / "run", 1))
    learner = checkpointing_builder(tmp_path / "run", 2).checkpoint("last").build(Classifier(), AdamConfig(), 1e-2)
    assert learner.resume_path() == tmp_path / "run" / "checkpoint" / "trainer-1.mpk"


# --- ranks started by ddp_spawn ------------------------------------------------------------------------
def spawn_learner(tmp_path) -> Learner:
    return (checkpointing_builder(tmp_path, 2).trainer_kwargs(strategy="ddp_spawn", accelerator="cpu", devices=2)
            .build(Classifier(), AdamConfig(), 1e-2))


def test_under_ddp_spawn_each_rank_ends_its_fit_as_lightning_ends_one_it_did_not_spawn(tmp_path):
    """On an error the rank's callbacks hear of it and its trainer is torn down before the process
    exits (the DDP wrapper let go of the gloo group)."""
    learner = spawn_learner(tmp_path)
    assert type(learner.trainer.strategy.launcher) is TearDownSpawnedRanks
    heard: list[BaseException] = []
    learner.trainer.callbacks.append(type("Hear", (L.Callback,), {"on_exception": lambda s, t, m, e: heard.append(e)})())
    learner.trainer.strategy.connect(learner.module)

    def fails() -> None:
        raise Preempted(143)

    threads = torch.get_num_threads()  # the launcher sets a rank's thread count
    try:
        with pytest.raises(Preempted):  # what a spawned rank runs: its fit, here one that is preempted
            learner.trainer.strategy.launcher._wrapping_function(0, learner.trainer, fails, (), {}, None)
    finally:
        torch.set_num_threads(threads)
    assert learner.trainer.state.status == TrainerStatus.INTERRUPTED and [type(e) for e in heard] == [Preempted]


@pytest.mark.parametrize(("exit_code", "signal_name"), [(143, None), (138, None)])
def test_a_spawned_rank_preempted_stops_the_launching_process_with_its_status(tmp_path, monkeypatch, exit_code,
                                                                           signal_name):
    learner = spawn_learner(tmp_path)

    def fit(*args, **kwargs):
        raise ProcessExitedException(f"process 0 terminated with exit code {exit_code}", 0, 4242, exit_code)

    monkeypatch.setattr(learner.trainer, "fit", fit)
    with pytest.raises(Preempted) as stopped:
        learner.fit(loader(64, 16))
    assert stopped.value.code == exit_code


def test_a_spawned_rank_that_died_is_named_with_the_newest_checkpoint_and_the_resume_command(
        tmp_path, monkeypatch, capsys):
    fit(checkpointing_builder(tmp_path, 1))
    learner = spawn_learner(tmp_path)

    def fit_(*args, **kwargs):
        raise ProcessExitedException("process 1 terminated with signal SIGKILL", 1, 4242, -9, "SIGKILL")

    monkeypatch.setattr(learner.trainer, "fit", fit_)
    with pytest.raises(RankStopped) as stopped:
        learner.fit(loader(64, 16))
    assert stopped.value.code == 1
    [line] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("burnlike:")]
    assert line.startswith(f"burnlike: rank 1 (pid 4242, killed by SIGKILL) stopped, so rank 0 stops too; the newest "
                           f"complete checkpoint is {tmp_path / 'checkpoint' / 'trainer-1.mpk'}; resume with "
                           "learner.checkpoint=last (in code: checkpoint('last'))")


def test_any_other_error_of_a_fit_is_left_as_it_is(tmp_path, monkeypatch):
    learner = checkpointing_builder(tmp_path, 1).build(Classifier(), AdamConfig(), 1e-2)

    def fit_(*args, **kwargs):
        raise RuntimeError("Connection reset by peer")  # one process: no peer to lose

    monkeypatch.setattr(learner.trainer, "fit", fit_)
    with pytest.raises(RuntimeError, match="Connection reset by peer"):
        learner.fit(loader(64, 16))


def test_a_result_without_a_renderer_of_its_own_holds_burns_cli_renderer():
    """Burn's `LearningResult { model, renderer }` always has one (learner/train_val.rs): the builder's,
    else the default, off a terminal `CliMetricsRenderer` (renderer/mod.rs `default_renderer`)."""
    assert isinstance(TrainingResult(nn.Linear(1, 1)).renderer, CliMetricsRenderer)
    assert isinstance(LearningResult(nn.Linear(1, 1), None, None, None).renderer, CliMetricsRenderer)
    mine = CliMetricsRenderer()
    assert TrainingResult(nn.Linear(1, 1), renderer=mine).renderer is mine
