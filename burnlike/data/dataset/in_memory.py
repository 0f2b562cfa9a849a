"""Burn's `InMemDataset`: items held in a list, from Python objects, another dataset, JSON lines or CSV."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from burnlike.data.dataset.base import Dataset, as_dataset
from burnlike.data.dataset.errors import DatasetError, DatasetNotFoundError, EmptySplitError
from burnlike.data.dataset.rows import ItemReader

T = TypeVar("T")

__all__ = ["InMemDataset", "data_root", "open_text", "source_roots"]


def data_root(root: str | os.PathLike[str] | None = None) -> Path:
    """`root`, else `$BURNLIKE_DATA`, else `./data`: the folder that holds local datasets
    (`MNIST/raw/`, CIFAR, AG News).

    Args:
        root: The folder (None: the environment's, else `./data`).
    """
    if root is None:
        root = os.environ.get("BURNLIKE_DATA") or "data"
    return Path(root).expanduser()


def source_roots(root: str | os.PathLike[str] | None) -> list[Path]:
    """Where a built-in source (CIFAR, AG News) is looked for: `root` alone if given, else
    `data_root()`, then Burn's cache folder `~/.cache/burn-dataset`.

    Args:
        root: The folder given by the user (None: look in the default places).
    """
    if root is not None:
        return [data_root(root)]
    return [data_root(), Path.home() / ".cache" / "burn-dataset"]


def open_text(path: str | os.PathLike[str], what: str) -> Any:
    """Open a UTF-8 text file (BOM allowed), or say which file of which kind is missing.

    Args:
        path: The file.
        what: What it is, for the message ("CSV file").

    Raises:
        DatasetNotFoundError: No file at `path`.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetNotFoundError(f"{what} {path} not found" + (" (it is a folder)" if path.is_dir() else ""))
    return open(path, encoding="utf-8-sig", newline="")


class InMemDataset(Dataset[T]):
    """`InMemDataset::new(items)`: a list of items in memory.

    Args:
        items: The items.

    Attributes:
        items: The items, as a list.
    """

    def __init__(self, items: Iterable[T]) -> None:
        self.items = list(items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[self._check(index)]

    def get(self, index: int) -> T | None:
        return self.items[index] if 0 <= index < len(self.items) else None

    def _check(self, index: int) -> int:
        if not 0 <= index < len(self.items):
            raise IndexError(f"index {index} is out of range for InMemDataset of length {len(self.items)}")
        return index

    @classmethod
    def from_dataset(cls, dataset: Any) -> InMemDataset[Any]:
        """Every item of `dataset` (Burn's or torch's kind), read once into memory.

        Args:
            dataset: The dataset to read.
        """
        return cls(as_dataset(dataset).iter())

    @classmethod
    def from_json_rows(cls, path: str | os.PathLike[str], item_type: type[T] | None = None) -> InMemDataset[Any]:
        """One JSON value per line (blank lines skipped); objects become `item_type` when given.

        Args:
            path: The JSON lines file.
            item_type: A dataclass to build from each object (None: the parsed values as they are).

        Raises:
            DatasetError: A line that is not valid JSON, or not an object when `item_type` is given.
        """
        reader = ItemReader(item_type, str(path))
        items = []
        with open_text(path, "JSON lines file") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DatasetError(f"{path} line {number}: not valid JSON ({e.msg})") from None
                if item_type is not None and not isinstance(value, dict):
                    raise DatasetError(f"{path} line {number}: expected a JSON object for "
                                       f"{item_type.__name__}, got {type(value).__name__}")
                items.append(reader.from_mapping(value, f" line {number}") if item_type is not None else value)
        return cls(items)  # type: ignore[arg-type]  # dicts when no item type is given

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], item_type: type[T] | None = None, *, delimiter: str = ",",
                 quotechar: str = '"', has_headers: bool = True) -> InMemDataset[Any]:
        """CSV rows as `item_type` (fields by header name) or, without one, dicts of strings.

        Without headers, values go to the fields in order (and rows stay lists without an item type).
        A missing column is reported once, naming it, before any row is read.

        Args:
            path: The CSV file.
            item_type: A dataclass per row (None: dicts, or lists without headers).
            delimiter: The field separator.
            quotechar: The quote character.
            has_headers: Whether the first row names the columns.

        Raises:
            EmptySplitError: No header row.
            DatasetError: A row with the wrong number of values, or a value of the wrong type.
        """
        reader = ItemReader(item_type, str(path))
        with open_text(path, "CSV file") as f:
            rows = csv.reader(f, delimiter=delimiter, quotechar=quotechar)
            header: Sequence[str] | None = None
            if has_headers:
                header = next(rows, None)
                if header is None:
                    raise EmptySplitError(f"{path}: empty file, expected a header row")
                header = [name.strip() for name in header]
                reader.check_columns(header)
            items: list[Any] = []
            for row in rows:
                if not row:
                    continue
                where = f" line {rows.line_num}"
                if header is None:
                    items.append(reader.from_sequence(row, where))
                    continue
                if len(row) != len(header):
                    raise DatasetError(f"{path}{where}: {len(row)} values, expected {len(header)} "
                                       f"(the header has {len(header)} columns)")
                items.append(reader.from_mapping(dict(zip(header, row)), where))
        return cls(items)
