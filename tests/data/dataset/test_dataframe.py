"""`burnlike.data.dataset.dataframe`: `DataframeDataset`, Burn's rows of a data frame, over pandas
and polars (Burn's own frame kind). Rows become the item dataclass (Burn's test frame: ints of
every width, bools, floats, strings, bytes), a part of the columns, renamed fields, or plain dicts;
missing values are `None` for optional fields and an error naming the row and column otherwise; a
missing column is named at construction, and a frame of another kind is refused. Polars columns
are read as Burn reads them: dates and times as integers, `NaN` as a float, and a dtype Burn can't
read named with its column."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burnlike.data.dataset import DataframeDataset, DatasetError, MissingColumnError, column
from tests.helpers.expect import raises_exactly

KINDS = ["pandas", "polars"]


def frame_maker(kind: str) -> Callable[[dict[str, Any]], Any]:
    """`DataFrame` of the frame kind `kind` (the test skips where that library isn't installed)."""
    return pytest.importorskip(kind).DataFrame


@dataclasses.dataclass
class BurnRow:
    int32: int
    bool: bool
    float64: float
    string: str
    int16: int
    uint32: int
    uint64: int
    float32: float
    int64: int
    int8: int
    binary: bytes


@dataclasses.dataclass
class PartialBurnRow:
    int32: int
    flag: bool = column("bool")
    string: str


def burn_frame(kind: str) -> Any:
    """Burn's `create_test_dataframe`, column for column (the numpy dtypes are polars' dtypes too)."""
    return frame_maker(kind)({
        "int32": np.array([1, 2, 3], np.int32), "bool": [True, False, True],
        "float64": np.array([1.1, 2.2, 3.3]), "string": ["Boo", "Boo2", "Boo3"],
        "int16": np.array([1, 2, 3], np.int16), "uint32": np.array([1, 2, 3], np.uint32),
        "uint64": np.array([1, 2, 3], np.uint64), "float32": np.array([1.1, 2.2, 3.3], np.float32),
        "int64": np.array([1, 2, 3], np.int64), "int8": np.array([1, 2, 3], np.int8),
        "binary": [bytes([1, 2, 3]), bytes([4, 5, 6]), bytes([7, 8, 9])],
    })


@pytest.mark.parametrize("kind", KINDS)
def test_rows_become_items_as_in_burns_tests(kind):
    ds = DataframeDataset(burn_frame(kind), BurnRow)
    assert (ds.len(), ds.is_empty(), ds.get(3), ds.get(-1)) == (3, False, None, None)
    item = ds.get(1)
    assert item == BurnRow(2, False, 2.2, "Boo2", 2, 2, 2, pytest.approx(2.2), 2, 2, bytes([4, 5, 6]))
    assert type(item.int32) is int and type(item.bool) is bool and type(item.float32) is float
    assert type(item.uint64) is int and type(item.binary) is bytes
    assert [i.string for i in ds.iter()] == ["Boo", "Boo2", "Boo3"]
    partial = DataframeDataset(burn_frame(kind), PartialBurnRow)
    assert partial.get(2) == PartialBurnRow(3, True, "Boo3")
    rows = DataframeDataset(burn_frame(kind)[["int8", "string"]])
    assert rows.get(0) == {"int8": 1, "string": "Boo"} and type(rows.get(0)["int8"]) is int
    assert rows[2] == {"int8": 3, "string": "Boo3"}


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_frame_is_an_empty_dataset(kind):
    ds = DataframeDataset(burn_frame(kind)[:0], BurnRow)
    assert (ds.len(), ds.is_empty(), ds.get(0)) == (0, True, None)


@dataclasses.dataclass
class Maybe:
    name: str | None
    value: float | None
    count: int


@pytest.mark.parametrize("kind", KINDS)
def test_missing_values_and_columns_are_named(kind):
    make = frame_maker(kind)
    ds = DataframeDataset(make({"name": ["a", None], "value": [1.5, None], "count": [1, None]}), Maybe)
    assert ds.get(0) == Maybe("a", 1.5, 1) and type(ds.get(0).count) is int
    with raises_exactly(DatasetError, f"DataframeDataset({kind}) row 1: column 'count' is empty; expected a int "
                                      "(declare it `| None` to allow that)"):
        ds.get(1)
    assert DataframeDataset(make({"name": ["a", None], "value": [1.5, None]})).get(1) == {"name": None, "value": None}
    with raises_exactly(MissingColumnError, f"DataframeDataset({kind}): column 'string' (field string) not found for "
                                            "PartialBurnRow; the columns are ['int32', 'bool', 'other']"):
        DataframeDataset(make({"int32": [1], "bool": [True], "other": [0]}), PartialBurnRow)
    bad = make({"int32": ["x"], "bool": [True], "string": ["s"]})
    with raises_exactly(DatasetError, f"DataframeDataset({kind}) row 0: column 'int32': 'x' is not a valid int"):
        DataframeDataset(bad, PartialBurnRow).get(0)


def test_pandas_counts_nan_and_na_as_missing():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"name": ["a", pd.NA], "value": [1.5, np.nan], "count": pd.array([1, None], dtype="Int64")})
    assert DataframeDataset(df).get(1) == {"name": None, "value": None, "count": None}
    assert DataframeDataset(df, Maybe).get(0) == Maybe("a", 1.5, 1)


def test_a_polars_nan_is_a_float_and_a_null_is_missing():
    """Burn visits a polars `NaN` as the f64 it is; only a null is `None`."""
    pl = pytest.importorskip("polars")
    ds = DataframeDataset(pl.DataFrame({"value": [float("nan"), None]}))
    assert np.isnan(ds.get(0)["value"]) and ds.get(1) == {"value": None}
    all_null = DataframeDataset(pl.DataFrame({"name": ["a", "b"], "value": [None, None], "count": [1, 2]}), Maybe)
    assert all_null.get(1) == Maybe("b", None, 2)


@dataclasses.dataclass
class Stamped:
    day: int
    time: int


def test_polars_dates_and_times_are_the_integers_burn_reads():
    """Burn's deserializer visits `AnyValue::Date` as its i32 days since 1970-01-01 and
    `AnyValue::Time` as its i64 nanoseconds since midnight."""
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"day": [datetime.date(1970, 1, 11), None], "time": [datetime.time(0, 0, 2, 5), None]})
    ds = DataframeDataset(df)
    assert ds.get(0) == {"day": 10, "time": 2_000_005_000} and type(ds.get(0)["day"]) is int
    assert ds.get(1) == {"day": None, "time": None}
    assert DataframeDataset(df, Stamped).get(0) == Stamped(10, 2_000_005_000)


def unreadable_polars_columns() -> list[tuple[str, Callable[[Any], Any]]]:
    """Columns of the dtypes Burn's deserializer has no arm for."""
    return [
        ("List", lambda pl: pl.Series([[1, 2], [3]])),
        ("Struct", lambda pl: pl.Series([{"a": 1}, {"a": 2}])),
        ("Datetime", lambda pl: pl.Series([datetime.datetime(2020, 1, 1)] * 2)),
        ("Duration", lambda pl: pl.Series([datetime.timedelta(seconds=1)] * 2)),
        ("Categorical", lambda pl: pl.Series(["a", "b"], dtype=pl.Categorical)),
        ("Decimal", lambda pl: pl.Series([1, 2]).cast(pl.Decimal(10, 2))),
    ]


@pytest.mark.parametrize(("dtype", "series"), unreadable_polars_columns(), ids=[c[0] for c in unreadable_polars_columns()])
def test_a_polars_dtype_burn_cannot_read_is_named_with_its_column(dtype, series):
    pl = pytest.importorskip("polars")
    values = series(pl)
    assert str(values.dtype).startswith(dtype)  # the whole dtype is named, as this polars prints it
    df = pl.DataFrame({"int32": [1, 2], "bool": [True, False], "string": ["a", "b"], "odd": values})
    message = (f"DataframeDataset(polars): column 'odd' has dtype {values.dtype}, which Burn's DataframeDataset can't "
               "read; expected booleans, integers, floats, strings, binary, dates or times (cast the column, or "
               "leave it out of the frame or the item type)")
    with raises_exactly(DatasetError, message):
        DataframeDataset(df)
    assert DataframeDataset(df, PartialBurnRow).get(1) == PartialBurnRow(2, False, "b")
    assert DataframeDataset(df.drop("odd")).get(0) == {"int32": 1, "bool": True, "string": "a"}


def test_a_frame_of_another_kind_is_refused():
    with raises_exactly(TypeError, "DataframeDataset: expected a pandas or polars DataFrame, got builtins.dict "
                                   "(pandas and polars come with `pip install 'burnlike[dataframe]'`)"):
        DataframeDataset({"a": [1]})


def test_a_polars_lazy_frame_is_refused_with_collect_as_the_hint():
    pl = pytest.importorskip("polars")
    with raises_exactly(TypeError, "DataframeDataset: expected a pandas or polars DataFrame, got "
                                   "polars.lazyframe.frame.LazyFrame (collect() it first)"):
        DataframeDataset(pl.LazyFrame({"a": [1]}))
