"""`LearnerSummary`: Burn's end-of-training table, from the run's metric store (or, for tools that
open a finished run dir, from its metric log files)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from burnlike.record.format.location import RemotePath
from burnlike.train.logger import logged_test_tags, read_epochs
from burnlike.train.metric.store import MetricStore, Split


@dataclass
class MetricSummary:
    split: str
    name: str
    min_value: float
    min_epoch: int
    max_value: float
    max_epoch: int
    epochs: dict[int, float] = field(default_factory=dict)


@dataclass
class LearnerSummary:
    """Burn's `LearnerSummary`: each metric's best and worst epoch values, per split; `str()` is
    the table Burn prints at the end of training."""

    total_epochs: int  # the last epoch with a logged value
    metrics: list[MetricSummary]  # one row per split and metric
    model: str | None = None  # the model's description, printed above the table (None: none)

    @classmethod
    def from_store(
        cls, store: MetricStore, train_names: list[str], valid_names: list[str], model: str | None = None
    ) -> LearnerSummary:
        """The summary of a run in this process: the epoch values it stored (synced across ranks).

        Args:
            store: The run's metric store.
            train_names: The training metrics' names.
            valid_names: The validation metrics' names.
            model: The model's description (None: none).
        """
        return cls._build(lambda split, name: store.epochs(Split(split), name), train_names, valid_names, model)

    @classmethod
    def from_dir(
        cls, artifact_dir: str | Path | RemotePath, train_names: list[str], valid_names: list[str],
        model: str | None = None, test_names: list[str] | None = None
    ) -> LearnerSummary:
        """The summary of a finished run dir, from its `<split>/epoch-N/<Metric>.log` files; with
        `test_names`, also their rows for every tagged test split there (`Test (<tag>)`), as Burn's
        summary scans every `test/<tag>` folder (burn-train `learner/summary.rs`).

        Args:
            artifact_dir: The run dir.
            train_names: The training metrics' names.
            valid_names: The validation metrics' names.
            model: The model's description (None: none).
            test_names: The test metrics' names (None: no test rows).
        """
        summary = cls._build(lambda split, name: read_epochs(artifact_dir, split, name), train_names, valid_names,
                             model)
        for tag in logged_test_tags(artifact_dir) if test_names else ():
            for name in sorted(set(test_names or ())):
                values = read_epochs(artifact_dir, f"test/{tag}" if tag else "test", name)
                if values:
                    summary.metrics.append(_row(f"test ({tag})" if tag else "test", name, values))
        return summary

    @classmethod
    def _build(cls, epochs_of: Callable[[str, str], dict[int, float]], train_names: list[str],
               valid_names: list[str], model: str | None) -> LearnerSummary:
        rows: list[MetricSummary] = []
        epochs_seen = 0
        for split, names in (("train", train_names), ("valid", valid_names)):
            for name in sorted(set(names)):
                values = epochs_of(split, name)
                if not values:
                    continue
                epochs_seen = max(epochs_seen, max(values))
                rows.append(_row(split, name, values))
        return cls(epochs_seen, rows, model)

    def get(self, split: str, name: str) -> MetricSummary | None:
        """The row of metric `name` in `split` (None: no such row).

        Args:
            split: "train", "valid", "test" or "test (<tag>)".
            name: The metric's name, as logged (`Accuracy`).
        """
        return next((m for m in self.metrics if m.split == split and m.name == name), None)

    def __str__(self) -> str:
        headers = ["Split", "Metric", "Min.", "Epoch", "Max.", "Epoch"]
        body = [
            [m.split.capitalize(), m.name, _fmt(m.min_value), str(m.min_epoch), _fmt(m.max_value), str(m.max_epoch)]
            for m in self.metrics
        ]
        # Burn's layout: Split as is, Metric as wide as the longest name, numbers in 8-wide cells.
        widths = [max([5, *(len(m.split) for m in self.metrics)]),  # "Test (tag)" rows widen it, as in Burn
                  max([6, *(len(m.name) for m in self.metrics)]), 8, 8, 8, 8]

        def row(cells: list[str]) -> str:
            return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

        lines = ["======================== Learner Summary ========================"]
        if self.model:
            lines.append(f"Model:\n{self.model}")
        lines += [f"Total Epochs: {self.total_epochs}", "", "", row(headers)]
        lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        lines += [row(r) for r in body]
        return "\n".join(lines)


def _row(split: str, name: str, values: dict[int, float]) -> MetricSummary:
    """A metric's row: its lowest and highest epoch values (the first epoch of a tie)."""
    lo = min(values, key=lambda e: (values[e], e))
    hi = max(values, key=lambda e: (values[e], -e))
    return MetricSummary(split, name, values[lo], lo, values[hi], hi, values)


def _fmt(x: float) -> str:
    """Burn's `{:<9.3}` / `{:<9.3e}` below 1e-2 (Rust style exponent: `7.100e-3`)."""
    if x != 0 and abs(x) < 1e-2:
        mantissa, exp = f"{x:.3e}".split("e")
        return f"{mantissa}e{int(exp)}"
    return f"{x:.3f}"
