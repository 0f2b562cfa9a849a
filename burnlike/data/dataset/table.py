"""A numeric table (features and a target) from CSV, held as two tensors.

Not one of Burn's types (Burn reads a CSV into `InMemDataset` of a struct); this is the same data
kept columnar, so a batch is one gather, like MNIST's.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from burnlike.data.dataset.base import BatchedItems, Dataset
from burnlike.data.dataset.errors import DatasetError, EmptySplitError, MissingColumnError
from burnlike.data.dataset.in_memory import open_text
from burnlike.data.dataset.rows import encode_labels

__all__ = ["TASKS", "TabularDataset", "TabularItem", "TabularItems"]

TASKS = ("classification", "regression")
"""What a table's target can be: class ids (classification) or numbers (regression)."""


@dataclasses.dataclass
class TabularItem:
    """One row: its features and its target."""

    features: Tensor  # float32 [F]
    target: Tensor  # int64 [] (classification) or float32 [T] (regression)


@dataclasses.dataclass
class TabularItems(BatchedItems[TabularItem]):
    """A batch as `__getitems__` returns it: one gather per tensor; also the list of its
    `TabularItem`s for a batcher that iterates (`BatchedItems`)."""

    features: Tensor  # float32 [B, F]
    targets: Tensor  # int64 [B] or float32 [B, T]

    def __len__(self) -> int:
        return int(self.features.shape[0])

    def item(self, index: int) -> TabularItem:
        return TabularItem(self.features[index], self.targets[index])


class TabularDataset(Dataset[TabularItem]):
    """Rows of `features` (float32 `[N, F]`) and `targets` (int64 `[N]` class ids, or float32 `[N, T]`).

    Args:
        features: The features, `[N, F]`.
        targets: The targets, `[N]` class ids or `[N, T]` values.
        feature_names: The feature columns' names.
        target_names: The target columns' names.
        classes: The class names in id order (None: a regression table).

    Attributes:
        features: float32 `[N, F]`.
        targets: int64 `[N]` or float32 `[N, T]`.
        classes: The class names in id order (None: regression).

    Raises:
        ValueError: Different row counts.
    """

    def __init__(self, features: Tensor, targets: Tensor, feature_names: Sequence[str],
                 target_names: Sequence[str], classes: Sequence[str] | None = None) -> None:
        if features.shape[0] != targets.shape[0]:
            raise ValueError(f"{features.shape[0]} feature rows but {targets.shape[0]} targets")
        self.features = features.to(torch.float32).contiguous()
        self.targets = targets.contiguous()
        self.feature_names, self.target_names = list(feature_names), list(target_names)
        self.classes = None if classes is None else list(classes)

    @property
    def task(self) -> str:
        """"classification" or "regression"."""
        return "classification" if self.classes is not None else "regression"

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], target: str | Sequence[str],
                 features: Sequence[str] | None = None, task: str = "classification",
                 classes: Sequence[str] | None = None, *, delimiter: str = ",") -> TabularDataset:
        """Feature columns (default: every column but the targets) as floats; a classification target
        is read by `encode_labels` (ids as written, or class names), a regression one as floats.

        Args:
            path: The CSV file (with a header).
            target: The target column, or several for a regression.
            features: The feature columns (None: every column but the targets).
            task: "classification" or "regression".
            classes: The class names in id order (None: from the labels).
            delimiter: The field separator.

        Raises:
            ValueError: An unknown task, or several targets for a classification.
            MissingColumnError: A column is not in the header.
            EmptySplitError: No header or no rows.
            DatasetError: A row with the wrong number of values, or a cell that isn't a number.
        """
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        targets = [target] if isinstance(target, str) else list(target)
        if task == "classification" and len(targets) != 1:
            raise ValueError(f"classification takes one target column, got {targets}")
        with open_text(path, "CSV file") as f:
            reader = csv.reader(f, delimiter=delimiter)
            header = [h.strip() for h in next(reader, [])]
            if not header:
                raise EmptySplitError(f"{path}: empty file, expected a header row")
            names = list(features) if features is not None else [h for h in header if h not in targets]
            missing = [c for c in [*names, *targets] if c not in header]
            if missing:
                raise MissingColumnError(f"{path}: column {', '.join(map(repr, missing))} not found; "
                                         f"the columns are {header}")
            rows, lines = [], []
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise DatasetError(f"{path} line {reader.line_num}: {len(row)} values, expected {len(header)}")
                rows.append(row)
                lines.append(reader.line_num)
        if not rows:
            raise EmptySplitError(f"{path}: no rows after the header")
        position = {name: i for i, name in enumerate(header)}
        x = _floats(path, rows, lines, [position[c] for c in names], names)
        if task == "classification":
            ids, found = encode_labels([r[position[targets[0]]] for r in rows], classes, str(path), lines)
            return cls(torch.from_numpy(x), torch.tensor(ids, dtype=torch.int64), names, targets, found)
        y = _floats(path, rows, lines, [position[c] for c in targets], targets)
        return cls(torch.from_numpy(x), torch.from_numpy(y), names, targets)

    def num_features(self) -> int:
        """F, the number of features."""
        return self.features.shape[1]

    def len(self) -> int:
        return self.features.shape[0]

    def get(self, index: int) -> TabularItem | None:
        if not 0 <= index < self.len():
            return None
        return TabularItem(self.features[index].clone(), self.targets[index].clone())

    def __getitems__(self, indices: Sequence[int]) -> TabularItems:
        idx = torch.as_tensor(list(indices), dtype=torch.int64)
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= self.len()):
            raise IndexError(f"index out of range for TabularDataset of length {self.len()}")
        return TabularItems(self.features.index_select(0, idx), self.targets.index_select(0, idx))


def _floats(path: str | os.PathLike[str], rows: list[list[str]], lines: list[int], columns: list[int],
            names: list[str]) -> np.ndarray:
    """The chosen columns as float32, or an error naming the first cell that isn't a number."""
    out = np.empty((len(rows), len(columns)), dtype=np.float32)
    for r, row in enumerate(rows):
        for c, column in enumerate(columns):
            try:
                out[r, c] = float(row[column])
            except ValueError:
                raise DatasetError(f"{path} line {lines[r]}: column {names[c]!r}: {row[column]!r} is not a number"
                                   ) from None
    return out
