"""`burnlike.train.tui`: `LiveView`, the live terminal display. Its frame is a dim panel titled
burnlike: a bold header (epoch of the limit, split and batch counts, speed, ETA; epochs alone for
a run without an epoch limit) over a table filling the panel, a row per metric with its running
values and its per-epoch sparklines. It redraws from the training loop at most every `refresh`
seconds (plus forced draws at the ends of validation, of each train epoch and of training), never
from a thread; it gives the terminal back when training fails, draws nothing while disabled, and
serves another run after one ended or failed."""

from __future__ import annotations

import io
import logging
import math
import signal
import sys
import threading
import time

import lightning as L
import pytest
from lightning.pytorch import Trainer
from rich.console import Console
from rich.file_proxy import FileProxy

from burnlike.optim import AdamConfig
from burnlike.train import Split, StepModule
from burnlike.train.metric import AccuracyMetric, LossMetric
from burnlike.train.preemption import Preempted
from burnlike.train.tui import BARS, LiveView, _duration, sparkline
from tests.helpers.fit import SignalAfter, cpu_builder, fit
from tests.helpers.toy import Batch, Classifier, FailsInTraining, loader
from tests.train.helpers import fit_with_display, silent_builder


def terminal():
    """A 120-column console that takes itself for a terminal (live display, cursor codes)."""
    return Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)


def plain(width=120):
    """A console writing plain text, `width` columns wide."""
    return Console(file=io.StringIO(), width=width, color_system=None)


def last_frame(console):
    """The last panel `console` received."""
    out = console.file.getvalue()
    return out[out.rindex("╭"):]


def row(frame, name):
    """The line of `frame` whose first cell is `name`."""
    return next(line for line in frame.splitlines() if line.startswith(f"│ {name} "))


def cells(frame, first):
    """Every cell of the table row whose first cell is `first`."""
    return [c.strip() for c in row(frame, first).strip("│").replace("┃", "│").split("│")]


def metric_cells(frame, name="Loss"):
    """A metric row's cells after its name: train, train plot, valid, valid plot."""
    return [cell.strip() for cell in row(frame, name).split("│")[2:-1]]


class FailsAtTheThirdBatch(Classifier):
    """Trains two batches, then raises: a run that fails with a live frame drawn."""

    calls = 0

    def train_step(self, batch: Batch):
        if self.calls == 2:
            raise RuntimeError("boom at the third batch")
        self.calls += 1
        return super().train_step(batch)


class Watch(L.Callback):
    """Notes rich refresh threads running while training."""

    threads: list[str]

    def on_train_batch_end(self, trainer, pl_module, *args):
        self.threads = [type(t).__name__ for t in threading.enumerate()]


def step_module():
    """A step module with train Loss and Accuracy and valid Loss, outside any run."""
    return StepModule(Classifier(), AdamConfig(), 1e-3, [LossMetric(), AccuracyMetric()], [LossMetric()])


def rendered(view, trainer, module, now, **console):
    """`view`'s frame for `trainer` and `module` at time `now`, as text."""
    out = Console(file=io.StringIO(), width=120, **({"color_system": None} | console))
    out.print(view.render(trainer, module, now))
    return out.file.getvalue()


# --- sparklines and durations ----------------------------------------------------------------------
def begin(view: LiveView, split: str, total: float) -> None:
    """The view at the start of a `split` pass of `total` batches."""
    view.split = split
    view.pace.begin(split, total)


def test_sparkline_scales_between_min_and_max():
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == BARS == "▁▂▃▄▅▆▇█"
    assert sparkline([7, 0]) == "█▁"
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"  # 3.5 rounds up to the fifth bar
    assert sparkline([10.0, 10.0, 10.0]) == "▁▁▁"  # no span: all at the bottom
    assert sparkline([1.0, float("nan"), 3.0]) == "▁█"  # NaN epochs are left out
    assert sparkline([]) == "" and sparkline([float("nan")]) == ""
    assert sparkline(list(range(50)), width=4) == "▁▃▆█"  # only the last `width` values: 46..49
    assert len(sparkline(list(range(50)))) == 40


@pytest.mark.parametrize(("seconds", "text"), [(0, "0:00:00"), (59.9, "0:00:59"), (61, "0:01:01"), (3540, "0:59:00"),
                                               (3600, "1:00:00"), (3661, "1:01:01"), (3725.9, "1:02:05"),
                                               (36000 + 61, "10:01:01")])
def test_duration_is_hours_minutes_seconds(seconds, text):
    assert _duration(seconds) == text


# --- a frame ---------------------------------------------------------------------------------------
def test_a_fresh_live_view_renders_an_empty_table_of_the_modules_metrics():
    frame = rendered(LiveView(), L.Trainer(max_epochs=3, logger=False), step_module(), now=100.0)
    lines = frame.splitlines()
    assert "─ burnlike ─" in lines[0]
    assert lines[1].strip("│ ") == "Epoch 1/3 · train 0/0 · 0.0 it/s"
    assert cells(frame, "Metric") == ["Metric", "Train", "train per epoch", "Valid", "valid per epoch"]
    assert cells(frame, "Loss") == ["Loss", "", "", "", ""]  # no running value, no epoch yet
    assert lines[3].count("━") > 100  # the table spans the panel


def test_live_view_table_fills_the_panel_and_leaves_missing_running_values_empty(tmp_path):
    learner = silent_builder(tmp_path).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(32, 16), loader(32, 16))
    view = LiveView(console=terminal())
    begin(view, "train", 2)  # nothing drawn yet: no running value in either split
    console = plain(100)
    console.print(view.render(learner.trainer, learner.module, now=view.pace.start + 1.0))
    lines = console.file.getvalue().splitlines()
    header = next(line for line in lines if "Metric" in line)
    assert [cell.strip() for cell in header.strip("│ ").split("┃")] == [
        "Metric", "Train", "train per epoch", "Valid", "valid per epoch"]
    # the table spreads its columns over the panel instead of fitting them to their titles
    assert header.rindex("┃") > len("│ Metric ┃ Train ┃ train per epoch ┃ Valid ┃") + 10
    assert [metric_cells(line) for line in lines if line.startswith("│ Loss ")] == [["", "▁", "", "▁"]]


def test_live_view_header_shows_speed_and_eta(tmp_path):
    view = LiveView(console=plain())
    learner = fit_with_display(tmp_path, epochs=1, progress_bar=False)
    trainer, module = Trainer(max_epochs=3, logger=False), learner.module
    begin(view, "train", 10)
    view.pace.done = 5
    console = plain()
    console.print(view.render(trainer, module, now=view.pace.start + 2.0))
    text = console.file.getvalue()
    assert "Epoch 1/3 · train 5/10 · 2.5 it/s · ETA 0:00:02" in text
    # the table lists the module's metrics with their epoch plots, no running value yet
    assert row(text, "Accuracy").count("▁") == 2 and row(text, "Loss").count("▁") == 2
    begin(view, "train", 10.0)  # Lightning counts batches in floats: a finite one is a total
    view.pace.done = 4
    console = plain()
    console.print(view.render(trainer, module, now=view.pace.start + 8.0))
    assert "Epoch 1/3 · train 4/10 · 0.5 it/s · ETA 0:00:12" in console.file.getvalue()
    begin(view, "train", 10)
    console = plain()
    console.print(view.render(trainer, module, now=view.pace.start))  # nothing done yet: no ETA
    assert "Epoch 1/3 · train 0/10 · 0.0 it/s" in console.file.getvalue() and "ETA" not in console.file.getvalue()
    begin(view, "valid", float("inf"))  # a loader without a length: no total, no ETA
    view.pace.done = 1500
    console = plain()
    console.print(view.render(trainer, module, now=view.pace.start + 1.0))
    text = console.file.getvalue()
    assert "Epoch 1/3 · valid 1,500 · 1,500.0 it/s" in text and "ETA" not in text
    # after the last epoch the epoch shown is the last one, not one past it
    console = plain()
    console.print(view.render(learner.trainer, module, now=view.pace.start + 1.0))
    assert "Epoch 1/1 · " in console.file.getvalue()


def test_live_view_speed_below_one_second():
    view = LiveView()
    begin(view, "train", 10)
    view.pace.done = 5
    assert "Epoch 1/2 · train 5/10 · 10.0 it/s · ETA 0:00:00" in rendered(
        view, L.Trainer(max_epochs=2, logger=False), step_module(), now=view.pace.start + 0.5)


def test_live_view_of_a_run_without_an_epoch_limit_counts_epochs_only():
    """A max_steps run has no epoch limit (Lightning: max_epochs None or -1): no "1/None" or "-1/-1"."""
    view = LiveView()
    begin(view, "train", 10)
    view.pace.done = 5
    module = step_module()
    for trainer in (L.Trainer(max_steps=100, logger=False), L.Trainer(max_epochs=-1, logger=False)):
        assert rendered(view, trainer, module, now=view.pace.start + 1.0).splitlines()[1].startswith("│ Epoch 1 · train 5/10")


def test_live_view_header_is_bold_and_the_border_dim():
    frame = rendered(LiveView(), L.Trainer(max_epochs=1, logger=False), step_module(), now=1.0,
                     force_terminal=True, color_system="standard")
    assert frame.startswith("\x1b[2m╭") and "\x1b[1mEpoch 1/1 · train 0/0" in frame


# --- during a run ----------------------------------------------------------------------------------
def test_live_view_shows_epochs_counts_running_values_and_plots(tmp_path):
    console = terminal()
    view = LiveView(refresh=0.0, console=console)
    learner = fit_with_display(tmp_path, view)
    assert learner.trainer.progress_bar_callback is view  # the builder added no display of its own
    store = learner.module.store
    frame = last_frame(console)
    assert "burnlike" in frame
    assert "Epoch 2/2 · train 4/4 · " in frame and " it/s · ETA 0:00:00" in frame
    header = frame.splitlines()[2]
    assert all(word in header for word in ("Metric", "Train", "train per epoch", "Valid", "valid per epoch"))
    for name, unit in (("Loss", ""), ("Accuracy", "%")):
        want = []
        for split in (Split.TRAIN, Split.VALID):
            first, second = store.epochs(split, name).values()
            # the running value at the epoch's end is the epoch value; the plot has one bar per epoch
            want += [f"{second:.4g}{unit}", "▁█" if second > first else "█▁" if second < first else "▁▁"]
        assert metric_cells(frame, name) == want
    # while validating, the header counted the valid batches
    assert "Epoch 1/2 · valid 2/2" in console.file.getvalue()
    assert console.file.getvalue().endswith("\x1b[?25h")  # the cursor is shown again at the end


def test_live_view_frame_is_a_dim_panel_titled_burnlike_with_a_bold_header(tmp_path):
    console = Console(file=io.StringIO(), force_terminal=True, width=100, color_system="standard")
    silent_builder(tmp_path).progress_bar(True).callback(LiveView(refresh=1e9, console=console)).build(
        Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    out = console.file.getvalue()
    assert "\x1b[2m╭─" in out and " burnlike " in out  # the border dim, the title in it
    assert "\x1b[1mEpoch 1/1 · train 2/2" in out  # the header bold


def test_every_live_frame_shows_the_metric_rows_and_no_thread_redraws(tmp_path):
    console, watch = terminal(), Watch()
    learner = fit_with_display(tmp_path, LiveView(refresh=0.0, console=console), watch, epochs=1)
    frames = console.file.getvalue().split("╭")[1:]
    assert len(frames) >= 8  # a frame per train and valid batch, plus the epoch ends
    for frame in frames:
        assert "│ Accuracy " in frame and "│ Loss " in frame
    assert "_RefreshThread" not in watch.threads  # redrawn from the loop only
    learner.trainer.validate(learner.module, loader(32, 16))  # after the run: the panel is gone, no redraw


def test_live_view_draws_running_train_values_between_forced_draws(tmp_path):
    console = terminal()
    silent_builder(tmp_path).progress_bar(True).callback(LiveView(refresh=0.0, console=console)).build(
        Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16))
    frames = [f for f in console.file.getvalue().split("╭") if "· train 1/4 ·" in f]  # after the first batch
    assert frames and all(metric_cells(f)[0] for f in frames)


def test_live_view_draws_the_train_values_at_each_epochs_end(tmp_path):
    console = terminal()
    silent_builder(tmp_path, epochs=2).progress_bar(True).callback(LiveView(refresh=1e9, console=console)).build(
        Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16))
    frames = [f for f in console.file.getvalue().split("╭") if "Epoch 1/2 · train 4/4" in f]
    assert frames and all(metric_cells(f)[0] for f in frames)


def test_live_view_shows_the_valid_running_value_during_validation(tmp_path):
    console = terminal()
    learner = silent_builder(tmp_path).progress_bar(True).callback(LiveView(refresh=0.0, console=console)).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16), loader(32, 16))
    out = console.file.getvalue()
    frames = [f for f in out.split("╭") if "valid 1/2" in f]  # drawn after the first valid batch
    assert frames and all(metric_cells(f)[2] for f in frames)


def test_live_view_shows_valid_values_drawn_at_the_end_of_validation(tmp_path):
    console = terminal()
    learner = silent_builder(tmp_path).progress_bar(True).callback(LiveView(refresh=1e9, console=console)).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16), loader(32, 16))
    frame = last_frame(console)
    (valid,) = learner.module.store.epochs(Split.VALID, "Loss").values()
    assert metric_cells(frame)[2] == f"{valid:.4g}"


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
    fit_with_display(tmp_path, LiveView(refresh=1e9, console=console), epochs=1)
    assert len(renders) == 3  # only the forced draws: end of validation, of the train epoch, of training
    assert "train 1/4" not in console.file.getvalue()
    renders.clear()
    console = terminal()
    fit_with_display(tmp_path / "every", LiveView(refresh=0.0, console=console), epochs=1)
    assert "train 1/4" in console.file.getvalue() and len(renders) > 3


def test_live_view_skips_redraws_within_its_refresh_interval(tmp_path):
    console = terminal()
    fit_with_display(tmp_path, LiveView(refresh=time.monotonic(), console=console), epochs=1)  # longer than the run
    assert "train 1/4" not in console.file.getvalue() and "train 4/4" in console.file.getvalue()


def test_disabled_live_view_draws_nothing_until_enabled(tmp_path):
    console = terminal()
    view = LiveView(refresh=0.0, console=console)
    view.disable()
    fit_with_display(tmp_path / "a", view, epochs=1)
    assert console.file.getvalue() == ""
    view.enable()
    fit_with_display(tmp_path / "b", view, epochs=1)
    assert "Epoch 1/1 · train 4/4" in last_frame(console)


class LogsAWarning(L.Callback):
    """Logs a warning at the second train step and notes where the terminal handler writes then."""

    def __init__(self, handler: logging.StreamHandler) -> None:
        self.handler, self.stream_during = handler, None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if batch_idx == 1:
            self.stream_during = self.handler.stream
            logging.getLogger("burnlike.test").warning("a warning during training")


def test_log_lines_go_above_the_live_view_and_the_handler_gets_its_stream_back(tmp_path, monkeypatch):
    """A handler writing to the terminal (Hydra's console handler) would put its lines inside the
    panel's redraws: while the view is live it writes through rich's stand-in, which prints above."""
    console = terminal()
    handler = logging.StreamHandler(sys.stdout)
    monkeypatch.setattr(logging.getLogger(), "handlers", [handler])
    probe = LogsAWarning(handler)
    fit_with_display(tmp_path, LiveView(refresh=0.0, console=console), probe, epochs=1)
    assert isinstance(probe.stream_during, FileProxy)  # rich's stdout: lines above the panel
    assert handler.stream is sys.stdout and not isinstance(handler.stream, FileProxy)  # given back
    out = console.file.getvalue()
    assert "a warning during training" in out  # written through the console, above a redraw


# --- failed runs and the next run ------------------------------------------------------------------
def test_live_view_releases_the_terminal_when_training_fails(tmp_path):
    console = terminal()
    with pytest.raises(RuntimeError, match="boom"):
        fit_with_display(tmp_path, LiveView(refresh=0.0, console=console), model=FailsAtTheThirdBatch())
    assert not isinstance(sys.stdout, FileProxy)  # print() goes to the real stdout again
    assert console.file.getvalue().endswith("\x1b[?25h")  # the cursor is shown again
    assert "train 2/4" in console.file.getvalue()


def test_validating_after_a_failed_live_run_draws_nothing(tmp_path):
    console = terminal()
    view = LiveView(refresh=0.0, console=console)
    with pytest.raises(RuntimeError, match="boom"):
        fit_with_display(tmp_path, view, model=FailsInTraining(), epochs=1)
    drawn = console.file.getvalue()
    trainer = L.Trainer(logger=False, callbacks=[view], enable_model_summary=False)
    trainer.validate(StepModule(Classifier(), AdamConfig(), 1e-2, [], [LossMetric()]), loader(32, 16))
    assert console.file.getvalue() == drawn


def test_a_live_view_serves_another_run_after_one_ended_or_failed(tmp_path):
    console = terminal()
    view = LiveView(refresh=0.0, console=console)
    with pytest.raises(RuntimeError, match="boom"):
        silent_builder(tmp_path / "fails").progress_bar(True).callback(view).build(FailsInTraining(), AdamConfig(), 1e-2).fit(loader(32, 16))
    view.disable()  # the next run draws nothing: the failed run's display is gone
    silent_builder(tmp_path / "quiet").progress_bar(True).callback(view).build(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    view.enable()
    silent_builder(tmp_path / "ends").progress_bar(True).callback(view).build(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    view.disable()  # and after a run that ended, too
    before = console.file.getvalue()
    silent_builder(tmp_path / "quiet2").progress_bar(True).callback(view).build(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16))
    assert console.file.getvalue() == before


def test_stopping_a_view_that_never_started_does_nothing():
    """The handler list _stop gives back starts empty, not unset: stopping before any start (a
    failure before on_train_start) leaves the view as it was."""
    view = LiveView(console=terminal())
    view._stop()
    assert view._live is None and view._moved == []


def test_a_resumed_epoch_continues_at_the_batch_it_stopped_at(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(Preempted):  # noticed at step 6: epoch 2 with 2 of its 4 batches done
        fit(cpu_builder(run).callback(SignalAfter(5, signal.SIGUSR1)))
    console = terminal()
    fit(cpu_builder(run).checkpoint("last").progress_bar(True).callback(LiveView(refresh=0.0, console=console)))
    assert "Epoch 2/2 · train 3/4" in console.file.getvalue()


def test_live_view_redraws_once_its_refresh_interval_has_passed(tmp_path):
    """The interval is a lower bound: a frame is due when exactly `refresh` seconds have passed
    (here both infinite: a view never drawn, refreshing only on forced draws otherwise)."""
    console = terminal()
    view = LiveView(refresh=math.inf, console=console)
    trainer = Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False, accelerator="cpu",
                      default_root_dir=tmp_path)
    module = step_module()
    view.on_train_start(trainer, module)
    try:
        view.pace.last = -math.inf
        view._draw(trainer, module, force=False)
        assert "Epoch 1" in console.file.getvalue()
        view._draw(trainer, module, force=False)  # just drawn: not again
        assert console.file.getvalue().count("Epoch 1") == 1
    finally:
        view._stop()
