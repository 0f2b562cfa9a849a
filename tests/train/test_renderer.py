"""`burnlike.train.renderer`: the progress displays. `progress_display` picks the live view on a
terminal and plain lines anywhere else (a stream without `isatty` included). `PlainProgress` writes
a line every `interval` seconds (time since its last line) and one at each split's end, with
thousands grouped and speeds rounded from 10 it/s up. `BurnProgressBar`, Lightning's tqdm bar in
Burn's words, counts epochs from 1 and shows the metrics' running means under Burn's names."""

import io
import re
import signal
import time

import pytest
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import CSVLogger

from burnlike.optim import AdamConfig
from burnlike.train import ClassificationOutput
from burnlike.train.metric import MetricContext
from burnlike.train.metric.store import Split
from burnlike.train.preemption import Preempted
from burnlike.train.renderer import BurnProgressBar, PlainProgress, progress_display
from burnlike.train.tui import LiveView
from tests.helpers.fit import SignalAfter, cpu_builder, fit
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import fit_with_display, silent_builder


class ProbeBar(Callback):
    """Reads the progress bar's metrics in the middle of the valid epoch."""

    def __init__(self, bar: BurnProgressBar) -> None:
        self.bar, self.seen = bar, []

    def on_validation_batch_end(self, trainer, pl_module, *args):
        valid_loss = next(m for m in pl_module.metrics("valid") if m.name == "Loss")
        self.seen.append((self.bar.get_metrics(trainer, pl_module).get("Loss"), f"{valid_loss.running():.4g}"))


# a plain progress line: where the run is, the metrics' running values, the speed
LINE = re.compile(r"^(epoch \d+/\d+ (?:train|valid)(?: \d+/\d+)?) Accuracy=(\S+)% Loss=(\S+) ([\d,]+|\d+\.\d\d) it/s$")


def plain_run(tmp_path, interval, train=64, valid=32, **trainer_kwargs):
    """Fit one epoch with `PlainProgress(interval)`; return the learner and each line's match of LINE."""
    stream = io.StringIO()
    learner = (silent_builder(tmp_path).progress_bar(True).callback(PlainProgress(interval=interval, stream=stream))
               .trainer_kwargs(**trainer_kwargs).build(Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(train, 16), loader(valid, 16))
    return learner, [LINE.match(line) for line in stream.getvalue().splitlines()]


# --- choosing a display ----------------------------------------------------------------------------
def test_progress_display_picks_the_live_view_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert isinstance(progress_display(Tty()), LiveView)
    assert isinstance(progress_display(io.StringIO()), PlainProgress)


def test_progress_display_takes_plain_lines_for_a_stream_without_isatty():
    class Sink:
        def write(self, text):
            return len(text)

        def flush(self):
            pass

    assert isinstance(progress_display(Sink()), PlainProgress)


# --- plain progress lines --------------------------------------------------------------------------
def test_plain_progress_writes_a_line_per_batch_and_one_per_split_at_its_end(tmp_path):
    assert PlainProgress().interval == 30.0
    learner, lines = plain_run(tmp_path, interval=0.0)
    assert all(lines)
    # the epoch's train line comes before its valid lines: its closing validation starts after the
    # last train step, and Burn logs train before valid
    assert [m.group(1) for m in lines] == ["epoch 1/1 train 1/4", "epoch 1/1 train 2/4", "epoch 1/1 train 3/4",
                                           "epoch 1/1 train 4/4", "epoch 1/1 train", "epoch 1/1 valid 1/2",
                                           "epoch 1/1 valid 2/2", "epoch 1/1 valid"]
    store = learner.module.store
    (train_loss,) = store.epochs(Split.TRAIN, "Loss").values()
    (valid_loss,) = store.epochs(Split.VALID, "Loss").values()
    # the last step's running value, and the split's end line (the stored value), are the epoch value
    assert lines[3].group(3) == lines[4].group(3) == f"{train_loss:.4g}"
    assert lines[6].group(3) == lines[7].group(3) == f"{valid_loss:.4g}"


def test_plain_progress_returns_to_the_train_counts_after_a_mid_epoch_validation(tmp_path):
    _, lines = plain_run(tmp_path, interval=0.0, valid=16, val_check_interval=0.5)
    assert all(lines)
    assert [m.group(1) for m in lines][:5] == ["epoch 1/1 train 1/4", "epoch 1/1 train 2/4", "epoch 1/1 valid 1/1",
                                               "epoch 1/1 valid", "epoch 1/1 train 3/4"]


def test_plain_progress_interval_is_the_time_since_the_last_line(tmp_path):
    _, lines = plain_run(tmp_path, interval=time.monotonic())  # longer than the run, shorter than 2× the clock
    assert [m.group(1) for m in lines] == ["epoch 1/1 train", "epoch 1/1 valid"]  # the split ends only


def test_plain_progress_line_groups_thousands_and_rounds_speeds_from_ten_up(tmp_path):
    learner = silent_builder(tmp_path).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(32, 16))
    display = PlainProgress()
    pace = display.paces["train"]

    def line(done: int, total: float, position: bool = True, seconds_ago: float = 100.0) -> str:
        pace.begin("train", total)
        pace.start = time.monotonic() - seconds_ago
        pace.done = done
        return display._line(learner.trainer, "train", {"Loss": "0.5"}, position=position)

    for done, total, want in ((5, 10.0, "train 5/10 "), (5, float("inf"), "train 5 "), (5000, 10, "train 5,000/10 ")):
        assert want in line(done, total)
    assert line(5, 10).endswith(" train 5/10 Loss=0.5 0.05 it/s")
    assert line(150_000, 10, position=False).endswith(" train Loss=0.5 1,500 it/s")
    assert line(1_050, 10, position=False).endswith(" 10 it/s")  # 10.5 it/s: from 10 on, whole numbers
    assert line(50, 10, position=False, seconds_ago=0.5).endswith(" 100 it/s")  # half a second: 100 it/s


def test_a_resumed_epochs_line_continues_at_its_batch_and_rates_only_the_resumed_steps(tmp_path):
    """An epoch resumed mid-way gets no epoch start (Lightning calls it for epochs it starts): the
    position continues from the batch the run stopped at, and the speed counts the steps since the
    resume (a clock that never started made it 1 step per uptime: 0.00 it/s)."""
    run = tmp_path / "run"
    with pytest.raises(Preempted):
        # noticed at the next step's end: step 6, epoch 2 with 2 of its 4 batches done
        fit(cpu_builder(run).callback(SignalAfter(5, signal.SIGUSR1)))
    stream = io.StringIO()
    fit(cpu_builder(run).checkpoint("last").progress_bar(True).callback(PlainProgress(interval=0.0, stream=stream)))
    lines = stream.getvalue().splitlines()
    assert [line.rsplit(" ", 2)[0] for line in lines[:3]] == [
        "epoch 2/2 train 3/4", "epoch 2/2 train 4/4", "epoch 2/2 train"]  # (this run has no train metrics)
    rate = float(lines[0].rsplit(" ", 2)[1].replace(",", ""))
    assert rate > 1.0, lines[0]


def test_disabled_plain_progress_writes_nothing_until_enabled(tmp_path):
    stream = io.StringIO()
    display = PlainProgress(interval=1e9, stream=stream)
    display.disable()
    fit_with_display(tmp_path / "a", display, epochs=1)
    assert stream.getvalue() == ""
    display.enable()
    fit_with_display(tmp_path / "b", display, epochs=1)
    lines = stream.getvalue().splitlines()
    assert [line.split(" Accuracy=")[0] for line in lines] == ["epoch 1/1 train", "epoch 1/1 valid"]


# --- Burn's progress bar (tqdm) --------------------------------------------------------------------
def test_burn_progress_bar_says_epoch_from_one_and_shows_burn_metric_names(tmp_path, capsys):
    bar = BurnProgressBar(refresh_rate=1)
    assert bar.refresh_rate == 1
    learner = fit_with_display(tmp_path, bar, logger=CSVLogger(tmp_path / "csv"))  # Lightning adds v_num with a logger
    assert learner.trainer.progress_bar_callback is bar
    out = capsys.readouterr().out  # Lightning's bar writes to stdout
    frames = out.replace("\n", "\r").split("\r")
    steps = [f for f in frames if any(f"| {n}/4 [" in f for n in range(1, 5))]  # batches done
    assert {f.split(":")[0] for f in steps} == {"Epoch 1/2", "Epoch 2/2"}
    assert "Accuracy=" in steps[-1] and "Loss=" in steps[-1] and "4/4" in steps[-1]
    assert "v_num" not in out
    # with_metric_logger (Burn 0.20's name) hands the logger the store's epoch values
    logged = next((tmp_path / "csv").rglob("metrics.csv")).read_text()
    assert "train/Loss" in logged.splitlines()[0] and "valid/Accuracy" in logged.splitlines()[0]
    metrics = bar.get_metrics(learner.trainer, learner.module)
    assert "v_num" not in metrics


def test_burn_progress_bar_metrics_are_the_running_means(tmp_path):
    bar = BurnProgressBar()
    assert bar.refresh_rate == 20
    learner = fit_with_display(tmp_path, bar, epochs=1)
    module = learner.module
    loss = next(m for m in module.metrics("train") if m.name == "Loss")
    for value, size in ((0.5, 3), (0.25, 1)):  # count-weighted: (1.5 + 0.25) / 4
        loss.update(ClassificationOutput(torch.full((size,), value), torch.zeros(size, 3), torch.zeros(size)),
                    MetricContext())
    metrics = bar.get_metrics(learner.trainer, module)
    assert metrics["Loss"] == "0.4375"
    assert "Accuracy" not in metrics  # not updated since the epoch's end


def test_the_progress_bar_shows_the_valid_running_means_while_validating(tmp_path):
    bar = BurnProgressBar()
    probe = ProbeBar(bar)
    silent_builder(tmp_path).progress_bar(True).callback(bar, probe).build(Classifier(), AdamConfig(), 1e-2).fit(
        loader(64, 16), loader(32, 16))
    assert len(probe.seen) == 2 and all(shown == valid for shown, valid in probe.seen)
