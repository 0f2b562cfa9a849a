"""`burnlike.train.epoch_logs`: each epoch the metric store stores goes to Burn's
`<split>/epoch-N/<Name>.log` files, one `value,count` line per step, and only where enabled (rank 0)."""

from __future__ import annotations

from burnlike.train.epoch_logs import EpochLogWriter
from burnlike.train.logger import read_epochs
from burnlike.train.metric import LossMetric
from burnlike.train.metric.store import EpochEntry, MetricStore, Split


def store_with(listener: EpochLogWriter) -> MetricStore:
    store = MetricStore()
    store.register([LossMetric()])
    store.add_listener(listener)
    return store


def test_each_stored_epoch_is_written_as_burns_metric_log(tmp_path):
    store = store_with(EpochLogWriter(tmp_path))
    store.end_epoch(Split.TRAIN, 1, {"Loss": EpochEntry(0.5, [(0.75, 16.0), (0.25, 16.0)])})
    store.end_epoch(Split.VALID, 1, {"Loss": EpochEntry(0.4, [(0.4, 8.0)])})
    assert (tmp_path / "train" / "epoch-1" / "Loss.log").read_text() == "0.75,16\n0.25,16\n"
    assert read_epochs(tmp_path, "valid", "Loss") == {1: 0.4}


def test_a_disabled_writer_writes_nothing(tmp_path):
    """Another rank's store: its values are its own shard's, the run's files are rank 0's."""
    store = store_with(EpochLogWriter(tmp_path, enabled=lambda: False))
    store.end_epoch(Split.TRAIN, 1, {"Loss": EpochEntry(0.5, [(0.5, 16.0)])})
    assert not (tmp_path / "train").exists()
