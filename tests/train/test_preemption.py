"""`burnlike.train.preemption`: on SIGTERM or SIGUSR1 a run saves a checkpoint at the next train
step and exits 128 + the signal, even when the signal comes during validation. Its handlers chain
to Lightning's (and keep Lightning from acting on a SIGTERM), survive their trainer and are
restored at teardown; checkpoints carry numpy's random state, and `SkipFirst` skips the batches a
mid-epoch checkpoint had trained, on the first pass only."""

from __future__ import annotations

import logging
import os
import random
import signal
import sys

import lightning as L
import numpy as np
import pytest

from burnlike.record.checkpoint.protocol import EpochCheckpoint
from burnlike.train.preemption import Preempted, Preemption, RandomState, SkipFirst, restore_random_state
from tests.helpers.fit import SignalAfter, cpu_builder, fit, same_weights
from tests.helpers.toy import Classifier


class SigtermDuringValidation(L.Callback):
    """SIGTERM to this process at the first batch of epoch `epoch`'s validation (from 1)."""

    def __init__(self, epoch: int = 1) -> None:
        self.epoch = epoch

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, *args) -> None:
        if not trainer.sanity_checking and trainer.current_epoch + 1 == self.epoch and batch_idx == 0:
            os.kill(os.getpid(), signal.SIGTERM)


def test_skip_first_skips_only_on_the_first_pass():
    batches = SkipFirst([10, 11, 12, 13, 14], 2)
    assert len(batches) == 5
    assert list(batches) == [12, 13, 14]
    assert list(batches) == [10, 11, 12, 13, 14]
    assert list(SkipFirst([1, 2], 0)) == [1, 2] and list(SkipFirst([1, 2], 5)) == []


def test_checkpoints_keep_numpy_random_state(tmp_path):
    checkpoint: dict[str, object] = {}
    np.random.seed(7)
    RandomState().on_save_checkpoint(None, None, checkpoint)  # type: ignore[arg-type]
    expected = np.random.rand(3)
    state = EpochCheckpoint.from_dict(checkpoint).rng_state
    assert state is not None
    assert isinstance(state, dict) and "numpy" in state
    np.random.rand(5)
    random.random()
    restore_random_state(state)
    assert np.array_equal(np.random.rand(3), expected)


def test_preemption_handler_chains_keeps_sigterm_from_lightning_and_survives_its_trainer(tmp_path):
    seen = []

    def own(signum, frame):
        seen.append((signum, frame))

    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    signal.signal(signal.SIGUSR1, own)
    try:
        trainer = L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)
        preemption = Preemption(lambda step: tmp_path / f"preempted-{step}.mpk")
        preemption.on_train_start(trainer, Classifier())
        frame = sys._getframe()
        trainer._signal_connector.received_sigterm = True  # Lightning's own handler saw a SIGTERM
        signal.getsignal(signal.SIGUSR1)(signal.SIGUSR1, frame)
        assert seen == [(signal.SIGUSR1, frame)] and preemption.received == signal.SIGUSR1
        assert trainer.received_sigterm is True  # a SIGUSR1 leaves Lightning's SIGTERM flag alone
        notice = signal.getsignal(signal.SIGTERM)
        notice(signal.SIGTERM, frame)
        assert trainer.received_sigterm is False  # taken back: the next step saves instead
        assert preemption.received == signal.SIGTERM

        def later(signum, frame):  # someone installs a handler over ours and chains to it
            notice(signum, frame)

        signal.signal(signal.SIGTERM, later)
        preemption.teardown(trainer, Classifier(), "fit")
        assert signal.getsignal(signal.SIGUSR1) is own and signal.getsignal(signal.SIGTERM) is later
        preemption.received = None
        later(signal.SIGTERM, frame)  # no trainer any more: the signal is only noted
        assert preemption.received == signal.SIGTERM
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


@pytest.mark.parametrize("epoch", [1, 2])
def test_a_sigterm_during_validation_stops_at_once_and_the_resumed_run_trains_that_epoch_again(
        tmp_path, capsys, epoch):
    """A long validation would outlast a cluster's grace period: the run stops at the next
    validation batch, exit status 128 + 15. Lightning can't resume between an epoch's last step and
    its validation (it would skip that validation), so nothing is saved there: the resumed run
    trains the epoch again from the checkpoint before it (or from the start) and ends exactly as the
    uninterrupted run. (Lightning's own SIGTERM check would have ended the run with status 0.)"""
    straight = fit(cpu_builder(tmp_path / "straight", epochs=3))
    before = signal.getsignal(signal.SIGTERM)
    run = tmp_path / "run"
    with pytest.raises(Preempted) as stopped:
        fit(cpu_builder(run, epochs=3).callback(SigtermDuringValidation(epoch)))
    assert stopped.value.code == 128 + signal.SIGTERM
    assert capsys.readouterr().err == (
        f"burnlike: preempted by SIGTERM during epoch {epoch}'s validation; resume with checkpoint('last') "
        f"(app: learner.checkpoint=last) from the newest checkpoint: epoch {epoch} is trained again\n")
    names = sorted(p.name for p in (run / "checkpoint").iterdir()) if (run / "checkpoint").exists() else []
    assert names == [f"{kind}-{e}.mpk" for e in range(1, epoch) for kind in ("model", "optim", "scheduler", "trainer")]
    assert signal.getsignal(signal.SIGTERM) == before  # Lightning's and ours both restored
    resumed = fit(cpu_builder(run, epochs=3).checkpoint("last"))
    assert same_weights(straight, resumed)
    for log in (tmp_path / "straight").glob("*/epoch-*/*.log"):
        assert (run / log.relative_to(tmp_path / "straight")).read_text() == log.read_text(), log


def test_a_signal_at_an_epochs_last_step_waits_for_its_checkpoint(tmp_path, capsys):
    """Noticed at the epoch's last step (no validation here), the run stops as the next epoch
    starts, once the epoch's checkpoint is saved: resuming trains nothing again."""
    run = tmp_path / "run"
    with pytest.raises(Preempted):
        fit(cpu_builder(run, epochs=2).callback(SignalAfter(3, signal.SIGUSR1)).trainer_kwargs(limit_val_batches=0))
    assert "preempted by SIGUSR1 at the end of epoch 1; resume with checkpoint('last')" in capsys.readouterr().err
    assert sorted(p.name for p in (run / "checkpoint").iterdir()) == [
        "model-1.mpk", "optim-1.mpk", "scheduler-1.mpk", "trainer-1.mpk"]


def test_a_signal_as_the_run_ends_says_it_finished(tmp_path, capsys):
    fit(cpu_builder(tmp_path, epochs=1).callback(SignalAfter(4, signal.SIGUSR1)).trainer_kwargs(limit_val_batches=0))
    assert capsys.readouterr().err == "burnlike: SIGUSR1 arrived as the run ended; it finished (nothing to resume)\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_with_no_trainer_attached_is_only_noted(tmp_path, signum):
    """teardown lets go of the trainer just before it gives the signal handlers back: a signal in
    between reaches the handler with no trainer, and must be noted, not raise inside the handler."""
    preemption = Preemption(lambda step: tmp_path / f"preempted-{step}.mpk")
    preemption._notice(signum, None)
    assert preemption.received == signum


def test_a_sigterm_puts_lightnings_flag_back_to_false_not_just_falsy(tmp_path):
    """Trainer.received_sigterm is a bool a user's callback may read or print: after the handler it
    reads False again, as before any signal."""
    trainer = L.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False)
    trainer._signal_connector.received_sigterm = True  # Lightning's own handler ran first
    preemption = Preemption(lambda step: tmp_path / f"preempted-{step}.mpk")
    preemption._trainer = trainer
    preemption._notice(signal.SIGTERM, None)
    assert preemption.received == signal.SIGTERM and trainer.received_sigterm is False


def test_a_signal_as_the_run_ends_is_logged_by_name(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="burnlike"):
        fit(cpu_builder(tmp_path, epochs=1).callback(SignalAfter(4, signal.SIGUSR1))
            .trainer_kwargs(limit_val_batches=0))
    assert "SIGUSR1 arrived as the run ended; it finished, nothing to resume" in caplog.messages
