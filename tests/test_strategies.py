"""Burn's checkpointing/early-stopping strategy logic, Module basics and the summary format."""

import pytest
import torch
from torch import nn

import burnlike
from burnlike.module import Module
from burnlike.train.checkpoint import (
    ComposedCheckpointingStrategy,
    Delete,
    Direction,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
    MetricStore,
    Save,
    Split,
    default_checkpointing_strategy,
)
from burnlike.train.metric import LossMetric
from burnlike.train.summary import LearnerSummary


def store_with(losses: dict[int, float]) -> MetricStore:
    store = MetricStore()
    store.register([LossMetric()])  # a run's store knows its metrics (and so Loss's direction)
    for epoch, loss in losses.items():
        store.record(Split.VALID, epoch, "Loss", loss)
    return store


def test_keep_last_n():
    s = KeepLastNCheckpoints(2)
    assert s.checkpointing(1, MetricStore()) == [Save()]
    assert s.checkpointing(3, MetricStore()) == [Save(), Delete(1)]


def test_metric_strategy_keeps_only_the_best():
    s = MetricCheckpointingStrategy("Loss", direction=Direction.LOWEST, split=Split.VALID)
    assert s.checkpointing(1, store_with({1: 0.5})) == [Save()]
    assert s.checkpointing(2, store_with({1: 0.5, 2: 0.7})) == []
    assert s.checkpointing(3, store_with({1: 0.5, 2: 0.7, 3: 0.4})) == [Delete(1), Save()]
    # not logged: save every epoch
    assert MetricCheckpointingStrategy("Accuracy").checkpointing(1, MetricStore()) == [Save()]


def test_default_composed_strategy_keeps_last_two_plus_best():
    strategy = default_checkpointing_strategy()
    losses = {1: 0.2, 2: 0.5, 3: 0.6, 4: 0.7, 5: 0.1, 6: 0.3, 7: 0.4}
    kept: set[int] = set()
    for epoch in losses:
        for action in strategy.checkpointing(epoch, store_with({e: losses[e] for e in losses if e <= epoch})):
            if isinstance(action, Save):
                kept.add(epoch)
            else:
                kept.discard(action.epoch)
        assert len(kept) <= 3
    assert kept == {5, 6, 7}  # best (5) and the last two
    assert isinstance(strategy, ComposedCheckpointingStrategy)


def test_composed_deletes_only_when_all_agree():
    strategy = ComposedCheckpointingStrategy.builder().add(KeepLastNCheckpoints(1)).add(
        MetricCheckpointingStrategy("Loss")).build()
    assert strategy.checkpointing(1, store_with({1: 0.1})) == [Save()]
    # epoch 1 is still the best: keep-last wants it gone, the metric strategy does not
    assert strategy.checkpointing(2, store_with({1: 0.1, 2: 0.9})) == [Save()]


def test_module_basics():
    class Net(Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.drop = nn.Dropout(0.5)

    net = Net()
    assert net.num_params() == 8
    inference = net.valid()
    assert inference is not net and not inference.training and net.training  # Burn's valid() is a copy
    assert not any(p.requires_grad for p in inference.parameters())
    assert all(p.requires_grad for p in net.parameters())
    assert net.devices() == [torch.device("cpu")]


def test_seed_is_reproducible():
    burnlike.seed(7)
    a = torch.rand(3)
    burnlike.seed(7)
    assert torch.equal(a, torch.rand(3))


def test_summary_format_matches_burn(tmp_path):
    for split, values in (("train", [91.2, 95.0, 97.8]), ("valid", [0.16, 0.1, 0.0071])):
        name = "Accuracy" if split == "train" else "Loss"
        for epoch, v in enumerate(values, 1):
            path = tmp_path / split / f"epoch-{epoch}" / f"{name}.log"
            path.parent.mkdir(parents=True)
            path.write_text(f"{v},64\n{v},64\n")
    text = str(LearnerSummary.from_dir(tmp_path, ["Accuracy"], ["Loss"]))
    assert "| Train | Accuracy | 91.200   | 1        | 97.800   | 3        |" in text
    assert "| Valid | Loss     | 7.100e-3 | 3        | 0.160    | 1        |" in text
    with pytest.raises(ValueError, match="Loss.log:1"):
        (tmp_path / "valid" / "epoch-1" / "Loss.log").write_text("oops\n")
        LearnerSummary.from_dir(tmp_path, [], ["Loss"])


def test_composed_of_two_keep_last():
    s = ComposedCheckpointingStrategy.builder().add(KeepLastNCheckpoints(1)).add(KeepLastNCheckpoints(2)).build()
    assert s.checkpointing(1, MetricStore()) == [Save()]
    assert s.checkpointing(2, MetricStore()) == [Save()]
    assert s.checkpointing(3, MetricStore()) == [Save(), Delete(1)]
