"""Burn's metric log files from the metric store: each stored epoch's per-step values go to
`<split>/epoch-N/<Name>.log` (`FileMetricLogger`), for a Lightning fit and a custom loop alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from burnlike.record.format.location import AnyPath, RemotePath
from burnlike.train.logger import FileMetricLogger
from burnlike.train.metric.store import EpochEntry, Split


class EpochLogWriter:
    """A metric store listener. `enabled()` is asked at each epoch: under DDP only rank 0 writes
    (Burn's files are per process, and rank 0's are the run's)."""

    def __init__(self, artifact_dir: str | AnyPath | RemotePath, enabled: Callable[[], bool] = lambda: True) -> None:
        self.files = FileMetricLogger(artifact_dir)
        self.enabled = enabled

    def __call__(self, split: Split, epoch: int, entries: Mapping[str, EpochEntry]) -> None:
        if self.enabled():
            for name, entry in entries.items():
                self.files.log_epoch(split.value, epoch, name, entry.steps)
