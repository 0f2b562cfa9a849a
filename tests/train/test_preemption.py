"""`burnlike.train.preemption`: on SIGTERM or SIGUSR1 a run saves a checkpoint at the next train
step and exits 128 + the signal, even when the signal comes during validation. Its handlers chain
to Lightning's (and keep Lightning from acting on a SIGTERM), survive their trainer and are
restored at teardown; checkpoints carry numpy's random state, and `SkipFirst` skips the batches a
mid-epoch checkpoint had trained, on the first pass only."""

from __future__ import annotations

import os
import random
import signal
import sys

import lightning as L
import numpy as np
import pytest

from burnlike.train.preemption import Preempted, Preemption, RandomState, SkipFirst, restore_random_state
from tests.helpers.fit import cpu_builder, fit
from tests.helpers.toy import Classifier


class SigtermDuringValidation(L.Callback):
    """SIGTERM to this process in the middle of epoch 1's validation."""

    def on_validation_batch_start(self, trainer, *args) -> None:
        if not trainer.sanity_checking and trainer.current_epoch == 0:
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
    state = checkpoint[RandomState.KEY]
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


def test_a_sigterm_during_validation_saves_and_exits_128_plus_15(tmp_path, capsys):
    """Lightning's own SIGTERM check in the validation loop would end such a run with exit status 0
    and no checkpoint (a cluster would take the job as done); the next train step saves instead."""
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Preempted) as stopped:
        fit(cpu_builder(tmp_path).callback(SigtermDuringValidation()))
    assert stopped.value.code == 128 + signal.SIGTERM
    assert "preempted by SIGTERM at epoch 2, step 5" in capsys.readouterr().err
    names = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    assert "trainer-1.mpk" in names and "preempted-5.mpk" in names
    assert signal.getsignal(signal.SIGTERM) == before  # Lightning's and ours both restored
