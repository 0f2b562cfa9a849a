"""`burnlike.train.renderer.processor`: the callbacks that hand a renderer each step's metric
states. An evaluation's state of a numeric metric formats the epoch's running mean so far, the
count-weighted mean of its steps, before the step's own value, as Burn's do."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from burnlike.data.dataloader import Progress
from burnlike.train import EvaluatorBuilder
from burnlike.train.metric import LossMetric
from burnlike.train.metric.entry import format_float
from burnlike.train.renderer.processor import items
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import StateLog


def test_an_evaluations_running_value_is_the_count_weighted_mean_of_its_steps(tmp_path):
    renderer = StateLog()
    torch.manual_seed(0)
    EvaluatorBuilder(tmp_path).metrics(LossMetric()).renderer(renderer).build(Classifier()).eval("t", loader(40, 16))
    steps = [(float(v), int(c)) for v, c in (s.entry.serialized_entry.serialized.split(",") for s in renderer.states)]
    shown = [s.entry.serialized_entry.formatted for s in renderer.states]
    expected = [f"epoch {format_float(sum(v * c for v, c in steps[:i]) / sum(c for _, c in steps[:i]), 2)} - "
                f"batch {format_float(steps[i - 1][0], 2)}" for i in (1, 2, 3)]
    assert shown == expected


def test_running_means_weigh_each_step_by_its_count_and_restart_from_a_resumed_epochs_steps():
    from burnlike.train.renderer.processor import RunningMeans

    running, loss = RunningMeans(), LossMetric()
    states = running.states("train", loss, [(1.0, 3.0), (3.0, 1.0)], numeric=True)
    assert [s.entry.serialized_entry.formatted for s in states] == [
        f"epoch {format_float(1.0, 2)} - batch {format_float(1.0, 2)}",
        f"epoch {format_float(1.5, 2)} - batch {format_float(3.0, 2)}"]
    assert running.states("train", loss, [(0.5, 2.0)], numeric=True)[0].numeric_entry.aggregated_value == 0.5
    assert running.sums["train"] == (7.0, 6.0)
    running.restart("train", [(2.0, 1.0), (4.0, 1.0)])  # the steps a resumed epoch had taken
    assert running.sums["train"] == (6.0, 2.0)
    running.restart("train")
    assert running.sums["train"] == (0.0, 0.0)


def test_a_pass_cut_short_counts_items_up_to_its_last_batch_and_an_unbounded_one_the_whole_sampler():
    """`limit_train_batches=3` over 100 items in batches of 10: the pass is 30 items, not 100; a pass
    of unknown length (an infinite batch total) reads the sampler's length."""
    data = DataLoader(TensorDataset(torch.zeros(100, 1)), batch_size=10)
    assert items(data, 2, 3.0) == Progress(20, 30)
    assert items(data, 2, float("inf")) == Progress(20, 100)
