"""Burn's `DataframeDataset`: the rows of a data frame as items.

Burn's is over a polars `DataFrame` and deserializes each row into the item struct. Here the frame
is a pandas or a polars `DataFrame` (pandas comes with the `dataframe` extra:
`pip install 'burnlike[dataframe]'`), the item type a dataclass whose fields are read from the
columns of the same names (`column("Name")` renames, as serde's `rename`; field types convert the
values as for `InMemDataset.from_csv`), and without an item type each row is a dict of every column.
Missing values become `None`: polars' nulls, and what pandas' `isna` flags (`None`, `NA`, `NaT`
and, as pandas counts it, a float `NaN`); a field that may be missing is declared `X | None`.
"""

from __future__ import annotations

import operator
from typing import Any, Generic, TypeVar

from burnlike.data.dataset.base import Dataset
from burnlike.data.dataset.rows import ItemReader

T = TypeVar("T")

__all__ = ["DataframeDataset"]


def _kind(df: Any) -> str:
    module = type(df).__module__.split(".")[0]
    if module in ("pandas", "polars") and type(df).__name__ == "DataFrame":
        return module
    raise TypeError(f"DataframeDataset: expected a pandas or polars DataFrame, got {type(df).__module__}."
                    f"{type(df).__name__} (pandas comes with `pip install 'burnlike[dataframe]'`)")


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (`np.bool_` is no `bool`, `np.int64` no `int`)."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


class DataframeDataset(Dataset[Any], Generic[T]):
    """`DataframeDataset::<I>::new(df)` is `DataframeDataset(df, I)`; `DataframeDataset(df)` gives dicts.

    Every column the item type needs must be in the frame (a `MissingColumnError` names the missing
    ones and lists the columns); a value its field can't hold is a `DatasetError` naming the row and
    the column. The frame is kept as it is, one column array per field, and rows are read on `get`.
    """

    def __init__(self, df: Any, item_type: type[T] | None = None) -> None:
        self.kind = _kind(df)
        self.reader: ItemReader[T] = ItemReader(item_type, f"DataframeDataset({self.kind})")
        names = [str(c) for c in df.columns]
        self.reader.check_columns(names)
        wanted = names if item_type is None else [c for c in self.reader.columns() if c in names]
        if self.kind == "pandas":
            positions = {name: i for i, name in enumerate(names)}
            series = {name: df.iloc[:, positions[name]] for name in wanted}
            self._columns: dict[str, Any] = {name: s.to_numpy() for name, s in series.items()}
            self._missing: dict[str, Any] = {name: s.isna().to_numpy() for name, s in series.items()}
            self._length = int(df.shape[0])
        else:
            self._columns = {name: df.get_column(name).to_list() for name in wanted}
            self._missing = {}
            self._length = int(df.height)

    def len(self) -> int:
        return self._length

    def get(self, index: int) -> T | dict[str, Any] | None:
        index = operator.index(index)
        if not 0 <= index < self._length:
            return None
        row = {name: None if name in self._missing and self._missing[name][index] else _plain(values[index])
               for name, values in self._columns.items()}
        return self.reader.from_mapping(row, f" row {index}")
