"""`burnlike.train.interrupter`: an `Interrupter` keeps the reason it was stopped for; a run given
one stops after the step during which it was stopped (from another thread, too), logging why and
after which step, and an interrupter never stopped changes nothing."""

import logging
import threading

import pytest
from lightning.pytorch.callbacks import Callback

from burnlike.optim import AdamConfig
from burnlike.train import Interrupter, LearnerBuilder
from burnlike.train.metric import LossMetric
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import silent_builder


def test_interrupter_keeps_its_reason():
    interrupter = Interrupter()
    assert interrupter.get_message() is None and not interrupter.should_stop()
    interrupter.stop("disk almost full")
    assert interrupter.should_stop() and interrupter.get_message() == "disk almost full"
    interrupter.reset()
    assert not interrupter.should_stop()


def test_an_interrupter_never_stopped_changes_nothing(tmp_path):
    learner = silent_builder(tmp_path, epochs=2).with_interrupter(Interrupter()).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16))
    assert learner.trainer.global_step == 8  # 4 steps an epoch, both epochs


@pytest.mark.parametrize(("reason", "logged"), [("user asked", "user asked"), (None, "Reason unknown")])
def test_an_interrupted_run_logs_why_and_after_which_step(tmp_path, caplog, reason, logged):
    interrupter = Interrupter()
    interrupter.stop(reason)  # already set: the run stops after its first step
    learner = silent_builder(tmp_path, epochs=2).with_interrupter(interrupter).build(Classifier(), AdamConfig(), 1e-2)
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        learner.fit(loader(64, 16))
    assert learner.trainer.global_step == 1
    assert f"Training interrupted: {logged} (after step 1)" in [r.getMessage() for r in caplog.records]


def test_interrupter_stops_within_one_step_from_another_thread(tmp_path):
    interrupter = Interrupter()
    reached, stopped = threading.Event(), threading.Event()

    class PauseAtStepTwo(Callback):  # holds step 2 until the other thread has called stop()
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.global_step == 2:
                reached.set()
                assert stopped.wait(timeout=60)

    def stop_when_reached():
        assert reached.wait(timeout=60)
        interrupter.stop("user asked")
        stopped.set()

    thread = threading.Thread(target=stop_when_reached)
    thread.start()
    learner = (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).num_epochs(3).devices(["cpu"])
               .progress_bar(False).with_interrupter(interrupter).callback(PauseAtStepTwo())
               .build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(256, 32))  # 8 steps an epoch, 24 without the interrupter
    thread.join()
    assert learner.trainer.global_step == 3  # the step after stop() was requested is the last
    assert len((tmp_path / "train" / "epoch-1" / "Loss.log").read_text().splitlines()) == 3
    assert "Training interrupted: user asked" in (tmp_path / "experiment.log").read_text()
