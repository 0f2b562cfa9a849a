"""Burn's `DataframeDataset`: the rows of a data frame as items.

Burn's is over a polars `DataFrame` and deserializes each row into the item struct. Here the frame
is a pandas or a polars `DataFrame` (both come with the `dataframe` extra:
`pip install 'burnlike[dataframe]'`), the item type a dataclass whose fields are read from the
columns of the same names (`column("Name")` renames, as serde's `rename`; field types convert the
values as for `InMemDataset.from_csv`), and without an item type each row is a dict of every column.
Missing values become `None`: polars' nulls, and what pandas' `isna` flags (`None`, `NA`, `NaT`
and, as pandas counts it, a float `NaN`; a polars `NaN` is a float, as in Burn); a field that may be
missing is declared `X | None`.

A polars column is read as Burn's row deserializer reads its `AnyValue`s: booleans, integers,
floats, strings, binary (`bytes`), nulls, and dates and times as the integers Burn visits (days
since 1970-01-01, nanoseconds since midnight). Burn fails on any other dtype (lists, structs,
datetimes, durations, decimals, categoricals...); here such a column, if read, is an error at
construction that names it and its dtype.
"""

from __future__ import annotations

import operator
from typing import Any, Generic, TypeVar

from burnlike.data.dataset.base import Dataset
from burnlike.data.dataset.errors import DatasetError
from burnlike.data.dataset.rows import ItemReader

T = TypeVar("T")

__all__ = ["DataframeDataset"]


# The polars dtypes whose values Burn's `RowDeserializer` visits as they are, and those it visits as
# their physical integer (`AnyValue::Date(i32)`, `AnyValue::Time(i64)`); it rejects every other one.
_POLARS_AS_IS = frozenset({"Boolean", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
                           "Float32", "Float64", "String", "Binary", "Null"})
_POLARS_PHYSICAL = frozenset({"Date", "Time"})


def _kind(df: Any) -> str:
    module = type(df).__module__.split(".")[0]
    if module in ("pandas", "polars") and type(df).__name__ == "DataFrame":
        return module
    hint = "collect() it first" if module == "polars" and type(df).__name__ == "LazyFrame" else \
        "pandas and polars come with `pip install 'burnlike[dataframe]'`"
    raise TypeError(f"DataframeDataset: expected a pandas or polars DataFrame, got {type(df).__module__}."
                    f"{type(df).__name__} ({hint})")


def _polars_column(df: Any, name: str) -> Any:
    """The column as Burn reads it (dates and times as integers); a dtype Burn can't read is named."""
    series = df.get_column(name)
    dtype = series.dtype.base_type().__name__  # polars 1.0 gives some dtypes as classes, `Time` not `Time()`
    if dtype in _POLARS_PHYSICAL:
        return series.to_physical()
    if dtype not in _POLARS_AS_IS:
        raise DatasetError(f"DataframeDataset(polars): column {name!r} has dtype {series.dtype}, which Burn's "
                           "DataframeDataset can't read; expected booleans, integers, floats, strings, binary, "
                           "dates or times (cast the column, or leave it out of the frame or the item type)")
    return series


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (`np.bool_` is no `bool`, `np.int64` no `int`)."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


class DataframeDataset(Dataset[Any], Generic[T]):
    """`DataframeDataset::<I>::new(df)` is `DataframeDataset(df, I)`; `DataframeDataset(df)` gives dicts.

    Every column the item type needs must be in the frame (a `MissingColumnError` names the missing
    ones and lists the columns); a value its field can't hold is a `DatasetError` naming the row and
    the column; so is, at construction, a polars column of a dtype Burn can't read. The frame is
    kept as it is, one column array (pandas) or `Series` (polars) per field, and rows are read on `get`.

    Args:
        df: A pandas or polars DataFrame.
        item_type: A dataclass per row (None: dicts).

    Attributes:
        kind: "pandas" or "polars".
        reader: Builds the items from the rows.

    Raises:
        TypeError: Not a pandas or polars DataFrame (a polars LazyFrame: collect it first).
        MissingColumnError: The frame lacks a column the item type needs.
        DatasetError: A polars column of a dtype Burn can't read.
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
            self._columns = {name: _polars_column(df, name) for name in wanted}
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
