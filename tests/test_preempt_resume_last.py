"""Preemption and `checkpoint("last")` in-process: a real signal mid-epoch saves `preempted-S`, the
newest complete checkpoint is found by its global step, and the resumed run skips the batches the
mid-epoch checkpoint already trained (`SkipFirst`), ending with the uninterrupted run's weights."""

import os
import shutil
import signal

import lightning as L
import pytest
import torch
from toy import Classifier, loader

from burnlike.optim import AdamConfig
from burnlike.record import DefaultRecorder
from burnlike.train import LearnerBuilder
from burnlike.train.checkpoint import KeepLastNCheckpoints, newest_checkpoint
from burnlike.train.metric import LossMetric
from burnlike.train.preemption import Preempted, SkipFirst


class SignalAfter(L.Callback):
    """Sends this process `signum` after global step `step`, as a cluster's scheduler would."""

    def __init__(self, step: int, signum: int) -> None:
        self.step, self.signum = step, signum

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step == self.step:
            os.kill(os.getpid(), self.signum)


def builder(root, epochs=2):
    return (LearnerBuilder(root).metric_valid_numeric(LossMetric()).with_file_checkpointer(DefaultRecorder())
            .with_checkpointing_strategy(KeepLastNCheckpoints(5)).num_epochs(epochs).progress_bar(False)
            .with_application_logger(False).devices(["cpu"]))


def fit(b):
    torch.manual_seed(0)
    return b.build(Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16, seed=1)).model


def same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


@pytest.fixture
def own_handler():
    """A handler of the program's own for SIGUSR1, restored after the test."""
    calls = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: calls.append(signum))
    yield calls
    signal.signal(signal.SIGUSR1, previous)


def test_a_signal_mid_epoch_saves_preempted_and_last_resumes_exactly(tmp_path, own_handler, capsys):
    straight = fit(builder(tmp_path / "straight"))
    handler = signal.getsignal(signal.SIGUSR1)
    run = tmp_path / "run"
    # 4 steps per epoch: the signal arrives after step 5, the next step (6) saves and stops
    with pytest.raises(Preempted) as stopped:
        fit(builder(run).callback(SignalAfter(5, signal.SIGUSR1)))
    assert stopped.value.code == 128 + signal.SIGUSR1
    assert own_handler == [signal.SIGUSR1]  # the program's handler still ran (chained)
    assert signal.getsignal(signal.SIGUSR1) is handler  # and is installed again after the run
    assert "preempted by SIGUSR1 at epoch 2, step 6" in capsys.readouterr().err
    names = sorted(p.name for p in (run / "checkpoint").iterdir())
    assert "preempted-6.mpk" in names and "trainer-1.mpk" in names and "trainer-2.mpk" not in names
    assert newest_checkpoint(run, "mpk") == run / "checkpoint" / "preempted-6.mpk"
    resumed = fit(builder(run).checkpoint("last"))
    assert same_weights(resumed, straight)  # batches 5 and 6 were not trained twice
    assert newest_checkpoint(run, "mpk") == run / "checkpoint" / "trainer-2.mpk"


def test_newest_checkpoint_goes_by_the_step_inside_the_file(tmp_path):
    assert newest_checkpoint(tmp_path, "mpk") is None  # no checkpoint folder
    fit(builder(tmp_path))  # trainer-1 (step 4), trainer-2 (step 8), model-1, model-2 …
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


def test_skip_first_skips_only_on_the_first_pass():
    batches = SkipFirst([10, 11, 12, 13, 14], 2)
    assert len(batches) == 5
    assert list(batches) == [12, 13, 14]
    assert list(batches) == [10, 11, 12, 13, 14]
    assert list(SkipFirst([1, 2], 0)) == [1, 2] and list(SkipFirst([1, 2], 5)) == []


class SigtermDuringValidation(L.Callback):
    """SIGTERM to this process in the middle of epoch 1's validation."""

    def on_validation_batch_start(self, trainer, *args) -> None:
        if not trainer.sanity_checking and trainer.current_epoch == 0:
            os.kill(os.getpid(), signal.SIGTERM)


def test_a_sigterm_during_validation_still_saves_and_exits_128_plus_15(tmp_path, capsys):
    """Lightning's own SIGTERM check in the validation loop ended such a run with exit status 0 and
    no checkpoint (a cluster would take the job as done); the next train step saves instead."""
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Preempted) as stopped:
        fit(builder(tmp_path).callback(SigtermDuringValidation()))
    assert stopped.value.code == 128 + signal.SIGTERM
    assert "preempted by SIGTERM at epoch 2, step 5" in capsys.readouterr().err
    names = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    assert "trainer-1.mpk" in names and "preempted-5.mpk" in names
    assert signal.getsignal(signal.SIGTERM) == before  # Lightning's and ours both restored
