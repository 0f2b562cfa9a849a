"""`burnlike.train.evaluator`: `EvaluatorBuilder(...).build(model).eval(tag, loader)`, Burn's
evaluator. It writes the test logs under `test/<slugged tag>/epoch-1` (Burn's `Split::Test(tag)`),
returns the count-weighted test values and, when asked, a summary at the test epoch; by default its
Trainer is a quiet test trainer (no logger, checkpoints or model summary) on the model's device.
A model's output that cannot feed a test metric is refused at build when the model declares its
types, and at any test step that returns one."""

from __future__ import annotations

import io
import logging
import math
import sys
import warnings

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelSummary
from torch import nn
from torch.utils.data import DataLoader

import burnlike
from burnlike.optim import AdamConfig
from burnlike.train import (
    EvaluatorBuilder,
    FileApplicationLoggerInstaller,
    Learner,
    LearnerBuilder,
    MetricInputError,
    Split,
    SupervisedTraining,
    TrainingStrategy,
)
from burnlike.train.evaluator import TEST_EPOCH
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from burnlike.train.renderer import CliMetricsRenderer
from burnlike.train.summary import MetricSummary
from tests.helpers.toy import Classifier, Regressor, UntypedRegressor, blobs, collate, loader
from tests.train.helpers import InferenceStepRegressor, NoParameters, StateLog


class Untyped(nn.Module):
    """An inference step without type hints: the output is only known at the first step."""

    def __init__(self):
        super().__init__()
        self.inner = Regressor()

    def inference_step(self, batch):
        return self.inner.step(batch)


def trained(tmp_path):
    """The toy classifier after one epoch (seed 0)."""
    torch.manual_seed(0)
    return (LearnerBuilder(tmp_path / "train").metrics(LossMetric()).devices(["cpu"]).progress_bar(False)
            .with_application_logger(False).build(Classifier(), AdamConfig(), 5e-2)
            .fit(loader(64, 16), loader(32, 16)).model)


# --- the builder and its trainer -------------------------------------------------------------------
def test_evaluator_trainer_settings_by_default(tmp_path):
    builder = EvaluatorBuilder(tmp_path)
    assert builder.trainer_kwargs_for(Classifier()) == {
        "default_root_dir": str(tmp_path), "logger": False, "enable_checkpointing": False,
        "enable_model_summary": False, "enable_progress_bar": True, "accelerator": "cpu", "devices": 1}
    assert builder.progress_bar(False).trainer_kwargs_for(Classifier())["enable_progress_bar"] is False
    assert builder.progress_bar().trainer_kwargs_for(Classifier())["enable_progress_bar"] is True
    # a model without parameters: Lightning picks the device
    assert "accelerator" not in builder.trainer_kwargs_for(nn.Identity())


def test_evaluator_defaults_translate_to_a_quiet_test_trainer(tmp_path, capsys):
    evaluator = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).build(Classifier())
    result = evaluator.evaluate("My Set", loader(32, 16))
    assert result.name == "My Set" and result.summary is None  # no summary unless asked
    assert set(result.metrics) == {"Accuracy", "Loss"}
    trainer = result.trainer
    assert trainer.default_root_dir == str(tmp_path)
    assert trainer.logger is None and trainer.checkpoint_callback is None
    assert not any(isinstance(c, ModelSummary) for c in trainer.callbacks)
    assert trainer.progress_bar_callback is not None  # shown by default
    assert not (tmp_path / "lightning_logs").exists()
    assert any(line.endswith(" burnlike.train: evaluating Classifier on test/my-set")
               for line in (tmp_path / "evaluation.log").read_text().splitlines())
    assert "Learner Summary" not in capsys.readouterr().out


class LogsInTest(L.Callback):
    """A user's callback that logs a value through the module at each test batch."""

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        pl_module.log("seen", float(batch_idx))


def test_lightnings_results_table_stays_out_of_an_evaluation(tmp_path, capsys):
    """The evaluation prints Burn's view alone, even when a callback given through `trainer_kwargs`
    logs during the test (what makes Lightning print its table of the logged values)."""
    builder = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).progress_bar(False).with_application_logger(False)
               .trainer_kwargs(callbacks=[LogsInTest()]))
    result = builder.build(Classifier()).evaluate("a", loader(32, 16))
    assert "seen" in result.trainer.callback_metrics  # what Lightning's table would have shown
    out = capsys.readouterr().out
    assert "Test metric" not in out and "seen" not in out


def test_the_metrics_are_inside_the_module_lightning_runs(tmp_path):
    """Lightning moves the module it tests to the evaluation's device (and casts it to its precision),
    submodules included: the metrics, and any network one holds, go along."""
    builder = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).progress_bar(False)
    result = builder.with_application_logger(False).build(Classifier()).evaluate("a", loader(16, 16))
    inside = [type(m) for m in result.trainer.lightning_module.modules()]
    assert AccuracyMetric in inside and LossMetric in inside


def test_evaluator_takes_burns_application_logger_installer(tmp_path):
    """burn-train/src/evaluator/builder.rs (v0.21.0): `with_application_logger(Option<Box<dyn
    ApplicationLoggerInstaller>>)`: the installer's file gets the evaluation's log, not evaluation.log."""
    installer = FileApplicationLoggerInstaller(tmp_path / "eval" / "mine.log")
    builder = EvaluatorBuilder(tmp_path).metrics(LossMetric()).with_application_logger(installer).progress_bar(False)
    builder.build(Classifier()).evaluate("a", loader(16, 16))
    assert "evaluating Classifier on test/a" in (tmp_path / "eval" / "mine.log").read_text()
    assert not (tmp_path / "evaluation.log").exists()
    with pytest.raises(TypeError, match="^EvaluatorBuilder.with_application_logger: expected an ApplicationLoggerInstaller"):
        EvaluatorBuilder(tmp_path).with_application_logger(1)


def test_evaluator_progress_bar_switch_shows_or_hides_the_bar(tmp_path):
    builder = EvaluatorBuilder(tmp_path).metrics(LossMetric()).with_application_logger(False)
    assert builder.progress_bar(False).build(Classifier()).evaluate("a", loader(16, 16)).trainer.progress_bar_callback is None
    assert builder.progress_bar().build(Classifier()).evaluate("a", loader(16, 16)).trainer.progress_bar_callback is not None


def test_evaluator_builder_options_reach_the_trainer_logs_and_results(tmp_path):
    model = trained(tmp_path)
    builder = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).metrics_text(AccuracyMetric()).progress_bar(False)
               .trainer_kwargs(limit_test_batches=2))
    assert builder.trainer_kwargs_for(model)["devices"] == 1  # default: the model's device
    assert builder.execution(TrainingStrategy.multi_device(["cpu", "cpu"])) is builder
    kwargs = builder.trainer_kwargs_for(model)
    assert (kwargs["accelerator"], kwargs["devices"], kwargs["strategy"]) == ("cpu", 2, "ddp")
    builder.execution(TrainingStrategy.single_device("cpu"))
    kwargs = builder.trainer_kwargs_for(model)
    assert (kwargs["accelerator"], kwargs["devices"], kwargs["limit_test_batches"]) == ("cpu", 1, 2)
    assert builder.trainer_kwargs(logger=True).trainer_kwargs_for(model)["logger"] is True  # given kwargs win
    builder.trainer_kwargs(logger=False)
    assert builder.with_application_logger(False) is builder
    test = loader(96, 16, seed=2)  # 6 batches, 2 of them evaluated
    result = builder.build(model).evaluate("held out", test)
    assert result.trainer.num_devices == 1 and not (tmp_path / "evaluation.log").exists()
    folder = tmp_path / "test" / "held-out" / "epoch-1"
    assert len((folder / "Accuracy.log").read_text().splitlines()) == 2  # limit_test_batches=2
    with torch.no_grad():
        batches = list(test)[:2]
        correct = sum(int((model(b.x).argmax(-1) == b.y).sum()) for b in batches)
    assert result.metrics["Accuracy"] == pytest.approx(100 * correct / 32)
    evaluator = builder.build(model)
    evaluator.evaluate("again", test)
    assert evaluator.results == {"again": {"Loss": pytest.approx(result.metrics["Loss"])}}  # text: not summarised
    builder.with_application_logger(True).build(model).evaluate("logged", test)
    assert "evaluating Classifier on test/logged" in (tmp_path / "evaluation.log").read_text()
    with pytest.raises(TypeError, match="device strategy"):
        builder.execution(["cpu"])


def test_evaluator_refuses_a_non_metric_naming_it(tmp_path):
    with pytest.raises(TypeError, match=r"^expected a burnlike Metric \(e\.g\. AccuracyMetric\(\)\), got str$"):
        EvaluatorBuilder(tmp_path).metric("Accuracy")


# --- the model's output against the test metrics ---------------------------------------------------
def test_evaluator_feeds_context_metrics_and_checks_untyped_outputs_at_the_first_step(tmp_path):
    builder = EvaluatorBuilder(tmp_path).progress_bar(False).with_application_logger(False)
    rate = builder.metrics(LearningRateMetric()).build(Classifier()).evaluate("lr", loader(16, 16))
    assert math.isnan(rate.metrics["Learning Rate"])  # no optimizer, no learning rate
    checked = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).progress_bar(False).with_application_logger(False)
    with pytest.raises(MetricInputError, match=r"^test metric 'Accuracy' \(AccuracyMetric\) needs"):
        checked.build(UntypedRegressor()).evaluate("r", loader(16, 16))
    with pytest.raises(MetricInputError, match=r"^test metric 'Accuracy'"):
        checked.build(Regressor())  # typed: refused before any data


class Switching(nn.Module):
    """An untyped inference step that classifies the first batch and regresses the others."""

    def __init__(self):
        super().__init__()
        self.classifier, self.regressor = Classifier(), Regressor()
        self.steps = 0

    def inference_step(self, batch):
        self.steps += 1
        return (self.classifier if self.steps == 1 else self.regressor).step(batch)


def test_an_untyped_models_output_is_checked_at_every_test_step(tmp_path):
    builder = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).progress_bar(False)
    with pytest.raises(MetricInputError, match="test metric 'Accuracy'"):
        builder.build(Untyped()).evaluate("blobs", loader(32, 16))
    switching = Switching()
    with pytest.raises(MetricInputError, match=r"^test metric 'Accuracy' .* the test step returns RegressionOutput"):
        builder.build(switching).evaluate("blobs", loader(32, 16))
    assert switching.steps == 2


# --- evaluating ------------------------------------------------------------------------------------
def test_evaluator_writes_tagged_test_logs_and_summary(tmp_path, capsys):
    torch.manual_seed(0)
    training = (SupervisedTraining(tmp_path, loader(128, 32), loader(64, 32, seed=1))
                .metrics((AccuracyMetric(), LossMetric())).num_epochs(1).progress_bar(False))
    model = training.launch(Learner(Classifier(), AdamConfig(), 5e-2)).model
    test = loader(96, 32, seed=2)
    evaluator = (EvaluatorBuilder(tmp_path).metrics((AccuracyMetric(), LossMetric())).summary()
                 .progress_bar(False).build(model))
    result = evaluator.evaluate("Blobs Test", test)
    folder = tmp_path / "test" / "blobs-test" / "epoch-1"  # Burn's Split::Test(tag) layout
    assert len((folder / "Accuracy.log").read_text().splitlines()) == 3
    with torch.no_grad():
        correct = sum(int((model(b.x).argmax(-1) == b.y).sum()) for b in test)
    assert result.metrics["Accuracy"] == pytest.approx(100 * correct / 96)
    assert read_metric_log(folder / "Loss.log") == pytest.approx(result.metrics["Loss"], rel=1e-6)
    assert (tmp_path / "evaluation.log").exists() and Split.TEST.value == "test"
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| Test (blobs-test) | Accuracy"))
    assert f"{result.metrics['Accuracy']:.3f}" in row
    assert any(line.startswith("| Train             | Accuracy") for line in out.splitlines())  # aligned
    second = evaluator.evaluate("other", loader(32, 32, seed=3))
    assert {"blobs-test", "other"} <= {m.split.partition("(")[2].rstrip(")") for m in second.summary.metrics}
    with pytest.raises(MetricInputError, match="test metric 'Accuracy'"):
        EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).build(InferenceStepRegressor())


def test_evaluation_result_names_its_run_and_prints_no_summary_unless_asked(tmp_path, capsys, caplog):
    burnlike.seed(0)
    evaluator = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).metrics_text(LearningRateMetric())
                 .progress_bar(False).with_application_logger(False).build(Classifier()))
    with caplog.at_level(logging.INFO, logger="burnlike.train"):
        result = evaluator.evaluate("Blobs Test", loader(32, 16))
    assert result.name == "Blobs Test" and result.summary is None
    assert capsys.readouterr().out == ""  # no summary table, no Lightning results table
    assert "evaluating Classifier on test/blobs-test" in [r.getMessage() for r in caplog.records]
    assert torch.isnan(torch.tensor(result.metrics["Learning Rate"]))  # no learning rate in a test
    assert evaluator.results == {"blobs-test": {"Loss": result.metrics["Loss"]}}  # numeric metrics only


def test_an_evaluation_tag_keeps_its_slashes_in_the_results(tmp_path):
    evaluator = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).progress_bar(False).with_application_logger(False)
                 .build(Classifier()))
    result = evaluator.evaluate("mnist/test", loader(16, 16))
    assert evaluator.results == {"mnist/test": {"Loss": result.metrics["Loss"]}}


def test_evaluating_an_empty_loader_gives_no_values(tmp_path):
    evaluator = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).progress_bar(False).with_application_logger(False)
                 .build(Classifier()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning warns that the loader is empty
        result = evaluator.evaluate("nothing", DataLoader([], batch_size=4, collate_fn=collate))
    assert result.metrics == {} and evaluator.results == {"nothing": {}}


def test_evaluator_handles_an_empty_loader_and_a_model_without_parameters(tmp_path):
    builder = EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).progress_bar(False).with_application_logger(False)
    empty = DataLoader(blobs(0), batch_size=4, collate_fn=collate)
    assert builder.build(Classifier()).evaluate("empty", empty).metrics == {}
    result = builder.build(NoParameters()).evaluate("fixed", loader(32, 16))
    assert 0 <= result.metrics["Accuracy"] <= 100 and result.trainer.num_devices == 1


# --- the summary -----------------------------------------------------------------------------------
def test_evaluator_summary_rows_are_the_test_values_at_the_test_epoch(tmp_path):
    burnlike.seed(0)
    evaluator = (EvaluatorBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric()).summary().progress_bar(False)
                 .with_application_logger(False).build(Classifier()))
    result = evaluator.evaluate("Blobs", loader(32, 16))
    rows = {m.name: m for m in evaluator.summary().metrics if m.split.startswith("test")}
    assert set(rows) == {"Accuracy", "Loss"}
    for name, row in rows.items():
        value = result.metrics[name]
        assert row == MetricSummary("test (blobs)", name, value, TEST_EPOCH, value, TEST_EPOCH, {TEST_EPOCH: value})


def test_evaluation_summary_row_names_the_tag_as_given_and_is_printed(tmp_path, capsys):
    evaluator = (EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()).summary().progress_bar(False)
                 .with_application_logger(False).build(Classifier()))
    result = evaluator.evaluate("mnist/digits", loader(32, 16))
    value = result.metrics["Accuracy"]
    assert result.summary.get("test (mnist/digits)", "Accuracy") == MetricSummary(
        "test (mnist/digits)", "Accuracy", value, 1, value, 1, {1: value})
    assert "Learner Summary" in capsys.readouterr().out


def test_the_evaluation_summary_is_flushed_to_stdout_at_once(tmp_path, monkeypatch):
    """The summary is printed and flushed: a stdout that is a pipe (block-buffered) holds it at once,
    before the next evaluation or a crash, not when Python's buffer happens to fill."""
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8"))
    evaluator = (EvaluatorBuilder(tmp_path).metrics(LossMetric()).summary().progress_bar(False)
                 .with_application_logger(False).build(Classifier()))
    evaluator.evaluate("blobs", loader(32, 16))
    assert "| Test (blobs)" in raw.getvalue().decode()


def test_an_evaluators_renderer_gets_numeric_states_of_its_numeric_metrics(tmp_path):
    renderer = StateLog()
    EvaluatorBuilder(tmp_path).metrics(LossMetric()).renderer(renderer).build(Classifier()).evaluate("t", loader(32, 16))
    assert len(renderer.states) == 2
    assert all(s.numeric_entry is not None and s.numeric_entry.serialize() == s.entry.serialized_entry.serialized
               for s in renderer.states)


# --- Burn's return values: the renderer goes from the fit through each evaluation --------------------
def test_the_mnist_examples_evaluation_chain_runs_on_the_fits_renderer_and_sums_up_every_tag(tmp_path, capsys):
    """Burn's mnist example (examples/mnist/src/training.rs, v0.21.0): `result.renderer` of a fit with
    the default display (Burn's CLI renderer, learner/train_val.rs) goes into a new
    `EvaluatorBuilder(dir).renderer(renderer)` per test set, `eval` returns it for the next, and
    `renderer.manual_close()` ends. The CLI renderer prints each test step (renderer/cli.rs); the last
    summary has every test/<tag> folder's rows (learner/summary.rs scans them all)."""
    burnlike.seed(0)
    training = (SupervisedTraining(tmp_path, loader(64, 32), loader(32, 32, seed=1)).metrics((AccuracyMetric(), LossMetric()))
                .num_epochs(1).summary().with_application_logger(False))
    result = training.launch(Learner(Classifier(), AdamConfig(), 5e-2))
    assert isinstance(result.renderer, CliMetricsRenderer)
    renderer = result.renderer
    capsys.readouterr()
    for name, seed in (("Plain", 2), ("Sr Rot", 3)):
        evaluator = (EvaluatorBuilder(tmp_path).renderer(renderer).metrics((AccuracyMetric(), LossMetric())).summary()
                     .build(result.model))
        renderer = evaluator.eval(name, loader(64, 32, seed=seed))
        assert renderer is result.renderer
    renderer.manual_close()
    out = capsys.readouterr().out
    assert out.count("EvaluationProgress(") == 4  # two steps per evaluation
    last = out[out.rindex("Learner Summary"):].splitlines()
    rows = [line.split("|")[1:3] for line in last if line.startswith("| Test")]
    assert [(split.strip(), metric.strip()) for split, metric in rows] == [
        ("Test (plain)", "Accuracy"), ("Test (plain)", "Loss"), ("Test (sr-rot)", "Accuracy"), ("Test (sr-rot)", "Loss")]
    for tag in ("plain", "sr-rot"):
        logged = read_metric_log(tmp_path / "test" / tag / "epoch-1" / "Loss.log")
        assert f"| {logged:<9.3f}|" in next(line for line in last if line.startswith(f"| Test ({tag})") and "Loss" in line)


def test_eval_returns_burns_default_renderer_without_one_and_evaluate_the_values(tmp_path):
    builder = EvaluatorBuilder(tmp_path).metrics(LossMetric()).progress_bar(False).with_application_logger(False)
    returned = builder.build(Classifier()).eval("a", loader(16, 16))
    assert isinstance(returned, CliMetricsRenderer)
    mine = StateLog()
    assert builder.renderer(mine).build(Classifier()).eval("b", loader(16, 16)) is mine
    result = builder.build(Classifier()).evaluate("c", loader(16, 16))
    assert result.renderer is mine and set(result.metrics) == {"Loss"}


def test_a_second_evaluations_summary_lists_every_test_tag_in_the_directory(tmp_path):
    """Burn's summary reads every `test/<tag>` folder of the directory (learner/summary.rs
    `collect_test_split_metrics`), not only this evaluator's: a fresh builder's second evaluation
    shows the first's rows too, their values the logged ones."""
    def evaluator():
        return (EvaluatorBuilder(tmp_path).metrics(LossMetric()).summary().progress_bar(False)
                .with_application_logger(False).build(Classifier()))

    torch.manual_seed(0)
    first = evaluator().evaluate("First Set", loader(32, 16))
    second = evaluator().evaluate("second", loader(32, 16, seed=1))
    assert [m.split for m in second.summary.metrics] == ["test (first-set)", "test (second)"]
    logged = read_metric_log(tmp_path / "test" / "first-set" / "epoch-1" / "Loss.log")
    assert second.summary.get("test (first-set)", "Loss").epochs == {1: logged}
    assert logged == pytest.approx(first.metrics["Loss"], rel=1e-12)
