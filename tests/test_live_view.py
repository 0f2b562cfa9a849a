"""The progress displays, driven by real (tiny) fits in-process: the rich live panel (`LiveView`) on
a terminal console, the plain line display, and Lightning's tqdm bar with Burn's names
(`BurnProgressBar`), each passed to the builder with `.callback(...)`."""

import io
import sys

import pytest
import torch
from lightning.pytorch import Trainer
from lightning.pytorch.loggers import CSVLogger
from rich.console import Console
from rich.file_proxy import FileProxy
from toy import Batch, Classifier, loader

import burnlike
from burnlike.optim import AdamConfig
from burnlike.train import ClassificationOutput, LearnerBuilder
from burnlike.train.metric import AccuracyMetric, LossMetric, MetricContext
from burnlike.train.metric.store import Split
from burnlike.train.renderer import BurnProgressBar, PlainProgress, progress_display
from burnlike.train.tui import BARS, LiveView, _duration, sparkline


def fit(tmp_path, *callbacks, epochs=2, model=None, progress_bar=True, logger=None):
    burnlike.seed(0)
    builder = LearnerBuilder(tmp_path)
    if logger is not None:
        builder.with_metric_logger(logger)
    learner = (builder.metrics(AccuracyMetric(), LossMetric()).devices(["cpu"])
               .num_epochs(epochs).with_application_logger(False).progress_bar(progress_bar)
               .callback(*callbacks).build(model or Classifier(), AdamConfig(), 1e-2))
    learner.fit(loader(64, 16), loader(32, 16))  # 4 train batches, 2 valid batches
    return learner


def terminal():
    return Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)


def plain(width=120):
    return Console(file=io.StringIO(), width=width, color_system=None)


def last_frame(console):
    out = console.file.getvalue()
    return out[out.rindex("╭"):]


def row(frame, name):
    return next(line for line in frame.splitlines() if line.startswith(f"│ {name} "))


# Pure helpers -------------------------------------------------------------------------------------
def test_sparkline_scales_between_min_and_max():
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == BARS == "▁▂▃▄▅▆▇█"
    assert sparkline([7, 0]) == "█▁"
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"  # 3.5 rounds up to the fifth bar
    assert sparkline([10.0, 10.0, 10.0]) == "▁▁▁"  # no span: all at the bottom
    assert sparkline([1.0, float("nan"), 3.0]) == "▁█"  # NaN epochs are left out
    assert sparkline([]) == "" and sparkline([float("nan")]) == ""
    assert sparkline(list(range(50)), width=4) == "▁▃▆█"  # only the last `width` values: 46..49
    assert len(sparkline(list(range(50)))) == 40


@pytest.mark.parametrize(("seconds", "text"), [(0, "0:00:00"), (59.9, "0:00:59"), (61, "0:01:01"),
                                               (3600, "1:00:00"), (3725.9, "1:02:05"), (36000 + 61, "10:01:01")])
def test_duration_is_hours_minutes_seconds(seconds, text):
    assert _duration(seconds) == text


# LiveView ---------------------------------------------------------------------------------------
def test_live_view_shows_epochs_counts_running_values_and_plots(tmp_path):
    console = terminal()
    view = LiveView(refresh=0.0, console=console)
    learner = fit(tmp_path, view)
    assert learner.trainer.progress_bar_callback is view  # the builder added no display of its own
    store = learner.module.store
    frame = last_frame(console)
    assert "burnlike" in frame
    assert "Epoch 2/2 · train 4/4 · " in frame and " it/s · ETA 0:00:00" in frame
    header = frame.splitlines()[2]
    assert all(word in header for word in ("Metric", "Train", "train per epoch", "Valid", "valid per epoch"))
    for name, unit in (("Loss", ""), ("Accuracy", "%")):
        cells = [cell.strip() for cell in row(frame, name).split("│")[2:-1]]
        want = []
        for split in (Split.TRAIN, Split.VALID):
            first, second = store.epochs(split, name).values()
            # the running value at the epoch's end is the epoch value; the plot has one bar per epoch
            want += [f"{second:.4g}{unit}", "▁█" if second > first else "█▁" if second < first else "▁▁"]
        assert cells == want
    # while validating, the header counted the valid batches
    assert "Epoch 1/2 · valid 2/2" in console.file.getvalue()
    assert console.file.getvalue().endswith("\x1b[?25h")  # the cursor is shown again at the end


def test_live_view_render_header_speed_and_eta(tmp_path):
    view = LiveView(console=plain())
    learner = fit(tmp_path, epochs=1, progress_bar=False)
    trainer, module = Trainer(max_epochs=3, logger=False), learner.module
    view._begin("train", 10)
    view._batches = 5
    console = plain()
    console.print(view.render(trainer, module, now=view._start + 2.0))
    text = console.file.getvalue()
    assert "Epoch 1/3 · train 5/10 · 2.5 it/s · ETA 0:00:02" in text
    # the table lists the module's metrics with their epoch plots, no running value yet
    assert row(text, "Accuracy").count("▁") == 2 and row(text, "Loss").count("▁") == 2
    view._begin("train", 10.0)  # Lightning counts batches in floats: a finite one is a total
    view._batches = 4
    console = plain()
    console.print(view.render(trainer, module, now=view._start + 8.0))
    assert "Epoch 1/3 · train 4/10 · 0.5 it/s · ETA 0:00:12" in console.file.getvalue()
    view._begin("train", 10)
    console = plain()
    console.print(view.render(trainer, module, now=view._start))  # nothing done yet: no ETA
    assert "Epoch 1/3 · train 0/10 · 0.0 it/s" in console.file.getvalue() and "ETA" not in console.file.getvalue()
    view._begin("valid", float("inf"))  # a loader without a length: no total, no ETA
    view._batches = 1500
    console = plain()
    console.print(view.render(trainer, module, now=view._start + 1.0))
    text = console.file.getvalue()
    assert "Epoch 1/3 · valid 1,500 · 1,500.0 it/s" in text and "ETA" not in text
    # after the last epoch the epoch shown is the last one, not one past it
    console = plain()
    console.print(view.render(learner.trainer, module, now=view._start + 1.0))
    assert "Epoch 1/1 · " in console.file.getvalue()


class Crashes(Classifier):
    def train_step(self, batch: Batch):
        if self.global_calls == 2:
            raise RuntimeError("boom at the third batch")
        self.global_calls += 1
        return super().train_step(batch)

    global_calls = 0


def test_live_view_releases_the_terminal_when_training_fails(tmp_path):
    console = terminal()
    with pytest.raises(RuntimeError, match="boom"):
        fit(tmp_path, LiveView(refresh=0.0, console=console), model=Crashes())
    assert not isinstance(sys.stdout, FileProxy)  # print() goes to the real stdout again
    assert console.file.getvalue().endswith("\x1b[?25h")  # the cursor is shown again
    assert "train 2/4" in console.file.getvalue()


def test_live_view_redraws_by_time_not_per_step(tmp_path, monkeypatch):
    default = LiveView()
    assert default.refresh == 0.5 and isinstance(default.console, Console)  # twice a second at most
    renders = []
    original = LiveView.render

    def counting(self, trainer, pl_module, now):
        renders.append(trainer.global_step)
        return original(self, trainer, pl_module, now)

    # counted at the source: rich also repaints the panel whenever something else prints while it
    # is live (its stdout/stderr redirection), so the number of panels in the output is not ours
    monkeypatch.setattr(LiveView, "render", counting)
    console = terminal()
    fit(tmp_path, LiveView(refresh=1e9, console=console), epochs=1)
    assert len(renders) == 3  # only the forced draws: end of validation, of the train epoch, of training
    assert "train 1/4" not in console.file.getvalue()
    renders.clear()
    console = terminal()
    fit(tmp_path / "every", LiveView(refresh=0.0, console=console), epochs=1)
    assert "train 1/4" in console.file.getvalue() and len(renders) > 3


def test_disabled_live_view_draws_nothing_until_enabled(tmp_path):
    console = terminal()
    view = LiveView(refresh=0.0, console=console)
    view.disable()
    fit(tmp_path / "a", view, epochs=1)
    assert console.file.getvalue() == ""
    view.enable()
    fit(tmp_path / "b", view, epochs=1)
    assert "Epoch 1/1 · train 4/4" in last_frame(console)


def test_progress_display_picks_the_live_view_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert isinstance(progress_display(Tty()), LiveView)
    assert isinstance(progress_display(io.StringIO()), PlainProgress)


# Plain lines ------------------------------------------------------------------------------------
def test_disabled_plain_progress_writes_nothing_until_enabled(tmp_path):
    stream = io.StringIO()
    display = PlainProgress(interval=1e9, stream=stream)
    display.disable()
    fit(tmp_path / "a", display, epochs=1)
    assert stream.getvalue() == ""
    display.enable()
    fit(tmp_path / "b", display, epochs=1)
    lines = stream.getvalue().splitlines()
    assert [line.split(" Accuracy=")[0] for line in lines] == ["epoch 1/1 valid", "epoch 1/1 train"]


# tqdm bar ---------------------------------------------------------------------------------------
def test_burn_progress_bar_says_epoch_from_one_and_shows_burn_metric_names(tmp_path, capsys):
    bar = BurnProgressBar(refresh_rate=1)
    assert bar.refresh_rate == 1
    learner = fit(tmp_path, bar, logger=CSVLogger(tmp_path / "csv"))  # Lightning adds v_num with a logger
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
    learner = fit(tmp_path, bar, epochs=1)
    module = learner.module
    loss = next(m for m in module.metrics("train") if m.name == "Loss")
    for value, size in ((0.5, 3), (0.25, 1)):  # count-weighted: (1.5 + 0.25) / 4
        loss.update(ClassificationOutput(torch.full((size,), value), torch.zeros(size, 3), torch.zeros(size)),
                    MetricContext())
    metrics = bar.get_metrics(learner.trainer, module)
    assert metrics["Loss"] == "0.4375"
    assert "Accuracy" not in metrics  # not updated since the epoch's end


def test_a_progress_bar_of_ones_own_replaces_the_builders(tmp_path):
    mine = PlainProgress(stream=io.StringIO())
    for builder in (LearnerBuilder(tmp_path).callback(mine), LearnerBuilder(tmp_path).trainer_kwargs(callbacks=[mine])):
        trainer = builder.devices(["cpu"]).build(Classifier(), AdamConfig(), 1e-2).trainer
        assert trainer.progress_bar_callback is mine
        assert sum(isinstance(c, (PlainProgress, LiveView, BurnProgressBar)) for c in trainer.callbacks) == 1
