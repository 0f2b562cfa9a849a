"""`burnlike.train.renderer`: the progress displays and Burn's metrics renderers.

`progress_display` picks the live view on a terminal and plain lines anywhere else (a stream
without `isatty` included). `PlainProgress` writes a line every `interval` seconds (time since its
last line) and one at each split's end, with thousands grouped and speeds rounded from 10 it/s up.
`BurnProgressBar`, Lightning's tqdm bar in Burn's words, counts epochs from 1 and shows the metrics'
running means under Burn's names.

A renderer given to `.renderer(r)` replaces the display: it gets each metric's definition before the
first step, each train and valid step's metric states (numeric for metrics registered as numeric,
their values those the metric logs hold) and progress, in the order the steps run, and the summary
at the end; Burn ≤ 0.20's one-argument `render_train(item)` works too."""

import io
import re
import signal
import time

import pytest
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import CSVLogger

import burnlike
from burnlike.data.dataloader import Progress
from burnlike.optim import AdamConfig
from burnlike.train import (
    ClassificationOutput,
    CliMetricsRenderer,
    EvaluationName,
    EvaluationProgress,
    EvaluatorBuilder,
    Learner,
    LearnerBuilder,
    MetricsRenderer,
    MetricsRendererTraining,
    MetricState,
    ProgressType,
    SupervisedTraining,
    TrainingProgress,
)
from burnlike.train.metric import (
    AccuracyMetric,
    LossMetric,
    MetricContext,
    MetricDefinition,
    MetricEntry,
    MetricId,
    NumericAttributes,
    NumericEntry,
    SerializedEntry,
)
from burnlike.train.metric.entry import format_float
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


# --- metrics renderers ----------------------------------------------------------------------------
class Recorder(MetricsRenderer):
    """Records every call, in order."""

    def __init__(self):
        self.calls = []

    def update_train(self, state):
        self.calls.append(("update_train", state))

    def update_valid(self, state):
        self.calls.append(("update_valid", state))

    def render_train(self, item, progress_indicators):
        self.calls.append(("render_train", item, progress_indicators))

    def render_valid(self, item, progress_indicators):
        self.calls.append(("render_valid", item, progress_indicators))

    def update_test(self, name, state):
        self.calls.append(("update_test", name, state))

    def render_test(self, item, progress_indicators):
        self.calls.append(("render_test", item, progress_indicators))

    def on_test_end(self, summary):
        self.calls.append(("on_test_end", summary))

    def manual_close(self):
        self.calls.append(("manual_close",))

    def register_metric(self, definition):
        self.calls.append(("register_metric", definition))

    def on_train_end(self, summary):
        self.calls.append(("on_train_end", summary))


def renderer_fit(tmp_path, renderer, builder=None, epochs=2):
    """Fit the toy classifier (seed 0) for `epochs` with `renderer`: 4 train and 2 valid steps an epoch."""
    burnlike.seed(0)
    builder = builder or LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric())
    learner = (builder.devices(["cpu"]).num_epochs(epochs).with_application_logger(False).renderer(renderer)
               .build(Classifier(), AdamConfig(), 1e-2))
    return learner, learner.fit(loader(64, 16), loader(32, 16, seed=1))


def test_a_renderer_gets_each_steps_metric_states_then_its_progress_in_the_order_the_steps_run(tmp_path):
    renderer = Recorder()
    _, result = renderer_fit(tmp_path, renderer)
    assert result.renderer is renderer
    kinds = [call[0] for call in renderer.calls]
    train_step = ["update_train", "update_train", "render_train"]
    valid_step = ["update_valid", "update_valid", "render_valid"]
    assert kinds == ["register_metric"] * 2 + (train_step * 4 + valid_step * 2) * 2 + ["on_train_end"]
    assert [call[1] for call in renderer.calls[:2]] == [
        MetricDefinition(MetricId("Accuracy"), "Accuracy", None, NumericAttributes("%", True)),
        MetricDefinition(MetricId("Loss"), "Loss", None, NumericAttributes(None, False))]
    assert renderer.calls[-1] == ("on_train_end", None)  # no summary without .summary()
    train = [(c[1], c[2]) for c in renderer.calls if c[0] == "render_train"]
    valid = [(c[1], c[2]) for c in renderer.calls if c[0] == "render_valid"]
    assert [item for item, _ in train] == [
        TrainingProgress(Progress(16 * i, 64), Progress(epoch, 2), i) for epoch in (1, 2) for i in range(1, 5)]
    assert [item for item, _ in valid] == [
        TrainingProgress(Progress(16 * i, 32), Progress(epoch, 2), i) for epoch in (1, 2) for i in range(1, 3)]
    item, indicators = train[5]
    assert indicators == [ProgressType.Detailed("Epoch", Progress(2, 2)), ProgressType.Value("Iteration", 2),
                          ProgressType.Detailed("Items", Progress(32, 64))]
    assert (item.epoch, item.epoch_total) == (2, 2)  # Burn <= 0.20's fields


def test_a_renderers_metric_states_are_the_steps_the_metric_logs_hold(tmp_path):
    renderer = Recorder()
    learner, _ = renderer_fit(tmp_path, renderer)
    for split in ("train", "valid"):
        for epoch in (1, 2):
            states = [c[1] for c in steps_of(renderer, split, epoch)]
            assert all(s.numeric_entry is not None for s in states)  # registered as numeric
            for name in ("Accuracy", "Loss"):
                mine = [s for s in states if s.entry.metric_id == MetricId(name)]
                logged = (tmp_path / split / f"epoch-{epoch}" / f"{name}.log").read_text().splitlines()
                assert [s.entry.serialized_entry.serialized for s in mine] == logged
                assert [s.numeric_entry for s in mine] == [NumericEntry.deserialize(line) for line in logged]
                # the last step's running value is the epoch's, as the store holds it
                stored = learner.module.store.epochs(Split(split), name)[epoch]
                unit = " %" if name == "Accuracy" else ""
                assert mine[-1].entry.serialized_entry.formatted.startswith(f"epoch {format_float(stored, 2)}{unit} - ")


def steps_of(renderer, split, epoch):
    """The update calls of `split` during `epoch` (each step's updates come before its render)."""
    out, pending = [], []
    for call in renderer.calls:
        if call[0] == f"update_{split}":
            pending.append(call)
        elif call[0] == f"render_{split}":
            if call[1].global_progress.items_processed == epoch:
                out += pending
            pending = []
    return out


def test_a_resumed_epoch_renders_from_its_next_step_with_the_restored_steps_in_its_running_value(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(Preempted):  # noticed at step 6: epoch 2 with 2 of its 4 batches done
        fit(cpu_builder(run).metric_train_numeric(LossMetric()).callback(SignalAfter(5, signal.SIGUSR1)))
    renderer = Recorder()
    builder = cpu_builder(run).metric_train_numeric(LossMetric()).checkpoint("last").renderer(renderer)
    burnlike.seed(0)
    learner = builder.build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16), loader(32, 16, seed=1))
    train = [c for c in renderer.calls if c[0] in ("update_train", "render_train")]
    assert [(c[1].epoch, c[1].iteration) for c in train if c[0] == "render_train"] == [(2, 3), (2, 4)]
    last = [c[1] for c in train if c[0] == "update_train"][-1]
    stored = learner.module.store.epochs(Split.TRAIN, "Loss")[2]  # the epoch's 4 steps, 2 before the resume
    assert last.entry.serialized_entry.formatted.startswith(f"epoch {format_float(stored, 2)} - ")


def test_metrics_not_registered_as_numeric_give_generic_states(tmp_path):
    renderer = Recorder()
    builder = LearnerBuilder(tmp_path).metric_train(AccuracyMetric()).metric_train_numeric(LossMetric())
    renderer_fit(tmp_path, renderer, builder, epochs=1)
    states = {c[1].entry.metric_id.id: c[1] for c in renderer.calls if c[0] == "update_train"}
    assert states["Accuracy"] == MetricState.Generic(states["Accuracy"].entry)
    assert states["Loss"].numeric_entry is not None and states["Loss"].numeric_entry.count == 1
    assert not any(c[0] == "update_valid" for c in renderer.calls)  # no valid metric: renders only
    assert sum(c[0] == "render_valid" for c in renderer.calls) == 2


def test_a_renderer_replaces_the_progress_display_and_gets_the_summary_instead_of_stdout(tmp_path, capsys):
    renderer = Recorder()
    learner, result = renderer_fit(tmp_path, renderer, LearnerBuilder(tmp_path).metrics(LossMetric()).summary())
    assert learner.trainer.progress_bar_callback is None
    assert not any(isinstance(c, (PlainProgress, LiveView, BurnProgressBar)) for c in learner.trainer.callbacks)
    assert renderer.calls[-1] == ("on_train_end", result.summary) and result.summary is not None
    assert "Loss" not in capsys.readouterr().out  # the renderer had the summary: nothing printed it


def test_the_default_on_train_end_prints_the_summary_as_burns_does(tmp_path, capsys):
    class Quiet(CliMetricsRenderer):
        def render_train(self, item, progress_indicators):
            pass

        def render_valid(self, item, progress_indicators):
            pass

    _, result = renderer_fit(tmp_path, Quiet(), LearnerBuilder(tmp_path).metrics(LossMetric()).summary(), epochs=1)
    assert capsys.readouterr().out.strip() == str(result.summary).strip()


def test_a_burn_0_20_renderer_with_one_argument_renders_and_a_duck_typed_one_works(tmp_path):
    class Old:  # not a subclass: the four training methods are enough; Burn <= 0.20's render_*(item)
        def __init__(self):
            self.items = []

        def update_train(self, state):
            pass

        def update_valid(self, state):
            pass

        def render_train(self, item):
            self.items.append(("train", item.epoch, item.iteration))

        def render_valid(self, item):
            self.items.append(("valid", item.epoch, item.iteration))

    renderer = Old()
    renderer_fit(tmp_path, renderer, epochs=1)
    assert renderer.items == [("train", 1, i) for i in range(1, 5)] + [("valid", 1, 1), ("valid", 1, 2)]


def test_renderer_refuses_an_object_without_the_training_methods(tmp_path):
    class Half:
        def update_train(self, state):
            pass

    with pytest.raises(TypeError, match="render_train, render_valid"):
        LearnerBuilder(tmp_path).renderer(Half())
    with pytest.raises(TypeError, match="abstract"):
        MetricsRendererTraining()  # Burn's required methods are abstract


def test_supervised_training_takes_a_renderer_and_returns_it(tmp_path):
    renderer = Recorder()
    burnlike.seed(0)
    result = (SupervisedTraining(tmp_path, loader(32, 16), loader(16, 16)).metrics(LossMetric()).num_epochs(1)
              .with_application_logger(None).renderer(renderer).launch(Learner(Classifier(), AdamConfig(), 1e-2)))
    assert result.renderer is renderer
    assert [c[0] for c in renderer.calls].count("render_train") == 2


def test_an_evaluators_renderer_gets_each_test_steps_states_and_progress(tmp_path, capsys):
    renderer = Recorder()
    torch.manual_seed(0)
    result = (EvaluatorBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).summary().renderer(renderer)
              .build(Classifier()).evaluate("holdout", loader(40, 16)))
    assert result.renderer is renderer and result.trainer.progress_bar_callback is None
    kinds = [c[0] for c in renderer.calls]
    assert kinds == ["register_metric"] * 2 + ["update_test", "update_test", "render_test"] * 3 + ["on_test_end"]
    assert renderer.calls[-1] == ("on_test_end", result.summary) and result.summary is not None
    assert "holdout" not in capsys.readouterr().out  # the summary went to the renderer
    renders = [c[1:] for c in renderer.calls if c[0] == "render_test"]
    assert [item for item, _ in renders] == [EvaluationProgress(Progress(16, 40), 1), EvaluationProgress(Progress(32, 40), 2),
                                             EvaluationProgress(Progress(40, 40), 3)]
    assert renders[0][1] == [ProgressType.Value("Iteration", 1), ProgressType.Detailed("Items", Progress(16, 40))]
    updates = [c[1:] for c in renderer.calls if c[0] == "update_test"]
    assert {name for name, _ in updates} == {EvaluationName("holdout")}
    losses = [state.entry.serialized_entry.serialized for _, state in updates if state.entry.metric_id.id == "Loss"]
    assert losses == (tmp_path / "test" / "holdout" / "epoch-1" / "Loss.log").read_text().splitlines()


def test_the_cli_renderer_prints_each_progress(capsys):
    cli = CliMetricsRenderer()
    cli.render_train(TrainingProgress.none(), [])
    cli.update_train(MetricState.Generic(MetricEntry(MetricId("Loss"), SerializedEntry("1", "1"))))
    assert capsys.readouterr().out == (
        "TrainingProgress(progress=None, global_progress=Progress(items_processed=0, items_total=0), "
        "iteration=None)\n")


def test_numeric_entries_serialize_as_burns_log_lines_and_format_as_burn_does():
    assert NumericEntry.Aggregated(97.5, 16).serialize() == "97.5,16"
    assert NumericEntry.Value(2.0).serialize() == "2" and NumericEntry.Value(1e-7).serialize() == "0.0000001"
    assert NumericEntry.deserialize("97.5,16") == NumericEntry.Aggregated(97.5, 16)
    assert NumericEntry.deserialize("0.25") == NumericEntry.Value(0.25) and NumericEntry.Value(0.25).count is None
    with pytest.raises(ValueError):
        NumericEntry.deserialize("1,2,3")
    assert NumericEntry.Value(2).better_than(NumericEntry.Value(1), higher_is_better=True)
    assert NumericEntry.Value(1).better_than(NumericEntry.Value(2), higher_is_better=False)
    assert [format_float(x, 2) for x in (97.125, 0.5, 0.01, 0.001, float("nan"))] == [
        "97.12", "0.50", "1.00e-2", "1.00e-3", "NaN"]
