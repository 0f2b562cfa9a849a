"""`burnlike.train.learner`: what `LearnerBuilder(...).build(...).fit(...)` leaves behind, as Burn's
learner does: the `epoch-N/<Metric>.log` files (one `value,count` line per batch) that parse back to
the logged epoch values, the experiment log, the summary table and the kept checkpoints, both taken
from the run's metric store rather than re-read from files; the metrics plot; and resuming, from
`checkpoint("last")` (naming the folder when nothing is there) or from a single-file `model-N`
checkpoint of an older layout."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from torch import nn

from burnlike.optim import AdamConfig, SgdConfig
from burnlike.record import DefaultRecorder, load_checkpoint
from burnlike.train import (
    FileApplicationLoggerInstaller,
    LearnerSummary,
    LearningResult,
    Split,
    TrainingResult,
)
from burnlike.train.learner import Learner
from burnlike.train.logger import read_epochs, read_metric_log
from burnlike.train.metric import LearningRateMetric
from burnlike.train.metric.store import EpochEntry
from burnlike.train.renderer import CliMetricsRenderer
from tests.helpers.fit import checkpointing_builder, fit, metrics_builder, same_weights
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import valid_loss_builder


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


def test_a_result_without_a_renderer_of_its_own_holds_burns_cli_renderer():
    """Burn's `LearningResult { model, renderer }` always has one (learner/train_val.rs): the builder's,
    else the default, off a terminal `CliMetricsRenderer` (renderer/mod.rs `default_renderer`)."""
    assert isinstance(TrainingResult(nn.Linear(1, 1)).renderer, CliMetricsRenderer)
    assert isinstance(LearningResult(nn.Linear(1, 1), None, None, None).renderer, CliMetricsRenderer)
    mine = CliMetricsRenderer()
    assert TrainingResult(nn.Linear(1, 1), renderer=mine).renderer is mine
