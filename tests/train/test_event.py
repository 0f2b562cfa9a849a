"""`burnlike.train.event`: Burn's `LearnerEvent`s and the event processor a custom learning strategy
reports to. Each processed item feeds the split's metrics and the renderer (Burn's metric states
and progress indicators); each epoch end stores the values, which the store's listeners get."""

import math

import pytest
import torch

from burnlike.data.dataloader import Progress
from burnlike.train import ClassificationOutput, LearnerEvent, SupervisedTrainingEventProcessor, TrainingItem
from burnlike.train.metric import AccuracyMetric, LossMetric
from burnlike.train.metric.store import MetricStore, Split
from burnlike.train.renderer import MetricsRenderer
from burnlike.train.summary import LearnerSummary


class Recording(MetricsRenderer):
    def __init__(self):
        self.calls = []

    def update_train(self, state):
        self.calls.append(("update_train", state.entry.metric_id, state.entry.serialized_entry.formatted))

    def update_valid(self, state):
        self.calls.append(("update_valid", state.entry.metric_id, state.entry.serialized_entry.formatted))

    def render_train(self, item, progress_indicators):
        self.calls.append(("render_train", item, [i.tag for i in progress_indicators]))

    def render_valid(self, item, progress_indicators):
        self.calls.append(("render_valid", item, [i.tag for i in progress_indicators]))

    def update_test(self, name, state):
        pass

    def render_test(self, item, progress_indicators):
        pass

    def manual_close(self):
        pass

    def register_metric(self, definition):
        self.calls.append(("register", definition.name))

    def on_train_end(self, summary):
        self.calls.append(("end", summary))


def output(correct: int, n: int = 4) -> ClassificationOutput:
    targets = torch.zeros(n, dtype=torch.long)
    logits = torch.zeros(n, 2)
    logits[:correct, 0] = 1.0
    logits[correct:, 1] = 1.0
    return ClassificationOutput(torch.tensor(0.5), logits, targets)


def processor(renderer=None):
    store = MetricStore()
    metrics = {"train": [AccuracyMetric(), LossMetric()], "valid": [AccuracyMetric()]}
    store.register([*metrics["train"], *metrics["valid"]])
    return SupervisedTrainingEventProcessor(metrics, store, renderer, {"train": ["Accuracy", "Loss"]}), store


def test_items_feed_the_splits_metrics_and_an_epoch_end_stores_the_count_weighted_mean():
    events, store = processor()
    stored = []
    store.add_listener(lambda split, epoch, entries: stored.append((split, epoch, sorted(entries))))
    for correct in (4, 2):
        events.process_train(LearnerEvent.ProcessedItem(TrainingItem(output(correct), Progress(4, 8), Progress(1, 2), 1)))
    events.process_valid(LearnerEvent.ProcessedItem(TrainingItem(output(1), Progress(4, 4), Progress(1, 2), 1)))
    events.process_train(LearnerEvent.EndEpoch(1))
    events.process_valid(LearnerEvent.EndEpoch(1))
    assert store.find_metric("Accuracy", 1, Split.Train) == pytest.approx(75.0)
    assert store.find_metric("Loss", 1, Split.Train) == pytest.approx(0.5)
    assert store.find_metric("Accuracy", 1, Split.Valid) == pytest.approx(25.0)
    assert stored == [(Split.Train, 1, ["Accuracy", "Loss"]), (Split.Valid, 1, ["Accuracy"])]
    assert events.numeric_names("train") == ["Accuracy", "Loss"] and events.numeric_names("valid") == []


def test_the_renderer_gets_registrations_states_with_running_means_progress_and_the_end():
    renderer = Recording()
    events, _ = processor(renderer)
    events.process_train(LearnerEvent.Start)
    events.process_train(LearnerEvent.Start)  # registers once
    for i, correct in enumerate((4, 2), start=1):
        events.process_train(LearnerEvent.ProcessedItem(
            TrainingItem(output(correct), Progress(4 * i, 8), Progress.new(1, 2), i, 0.1)))
    events.process_train(LearnerEvent.EndEpoch(1))
    summary = LearnerSummary.from_store(events.store, ["Accuracy", "Loss"], [])
    events.process_train(LearnerEvent.End(summary))
    assert [c for c in renderer.calls if c[0] == "register"] == [("register", "Accuracy"), ("register", "Loss")]
    accuracy = [c[2] for c in renderer.calls if c[0] == "update_train" and str(c[1]) == "Accuracy"]
    assert accuracy == ["epoch 100.00 % - batch 100.00 %", "epoch 75.00 % - batch 50.00 %"]
    renders = [c for c in renderer.calls if c[0] == "render_train"]
    assert [(r[1].progress, r[1].global_progress, r[1].iteration) for r in renders] == [
        (Progress(4, 8), Progress(1, 2), 1), (Progress(8, 8), Progress(1, 2), 2)]
    assert renders[0][2] == ["Epoch", "Iteration", "Items"]
    assert renderer.calls[-1] == ("end", summary) and events.renderer() is renderer
    assert summary.get("train", "Accuracy").epochs == {1: pytest.approx(75.0)}


def test_a_metric_the_output_cannot_feed_is_named_at_the_first_item():
    events, _ = processor()
    with pytest.raises(TypeError, match="Accuracy"):
        events.process_train(LearnerEvent.ProcessedItem(TrainingItem(object(), Progress(1, 1), Progress(1, 1))))


def test_events_are_checked_where_they_are_built():
    events, _ = processor()
    with pytest.raises(TypeError, match="process_train expects a LearnerEvent"):
        events.process_train(TrainingItem(output(1), Progress(1, 1), Progress(1, 1)))
    with pytest.raises(TypeError, match="LearnerEvent.ProcessedItem expects a TrainingItem"):
        LearnerEvent.ProcessedItem(output(1))
    for bad in (0, 1.0, True):
        with pytest.raises(ValueError, match=r"EndEpoch's epoch number \(from 1\) must be an integer >= 1"):
            LearnerEvent.EndEpoch(bad)
    assert math.isnan(processor()[0].metrics("train")[0].running())  # nothing processed yet
