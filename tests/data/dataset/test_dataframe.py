"""`burnlike.data.dataset.dataframe`: `DataframeDataset`, Burn's rows of a data frame, over pandas.
Rows become the item dataclass (Burn's test frame: ints of every width, bools, floats, strings,
bytes), a part of the columns, renamed fields, or plain dicts; missing values are `None` for
optional fields and an error naming the row and column otherwise; a missing column is named at
construction, and a frame of another kind is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from burnlike.data.dataset import DataframeDataset, DatasetError, MissingColumnError, column
from tests.helpers.expect import raises_exactly

pd = pytest.importorskip("pandas")


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


def burn_frame():
    """Burn's `create_test_dataframe`, column for column."""
    return pd.DataFrame({
        "int32": np.array([1, 2, 3], np.int32), "bool": [True, False, True],
        "float64": np.array([1.1, 2.2, 3.3]), "string": ["Boo", "Boo2", "Boo3"],
        "int16": np.array([1, 2, 3], np.int16), "uint32": np.array([1, 2, 3], np.uint32),
        "uint64": np.array([1, 2, 3], np.uint64), "float32": np.array([1.1, 2.2, 3.3], np.float32),
        "int64": np.array([1, 2, 3], np.int64), "int8": np.array([1, 2, 3], np.int8),
        "binary": [bytes([1, 2, 3]), bytes([4, 5, 6]), bytes([7, 8, 9])],
    })


def test_rows_become_items_as_in_burns_tests():
    ds = DataframeDataset(burn_frame(), BurnRow)
    assert (ds.len(), ds.is_empty(), ds.get(3)) == (3, False, None)
    item = ds.get(1)
    assert item == BurnRow(2, False, 2.2, "Boo2", 2, 2, 2, pytest.approx(2.2), 2, 2, bytes([4, 5, 6]))
    assert type(item.int32) is int and type(item.bool) is bool and type(item.float32) is float
    assert [i.string for i in ds.iter()] == ["Boo", "Boo2", "Boo3"]
    partial = DataframeDataset(burn_frame(), PartialBurnRow)
    assert partial.get(2) == PartialBurnRow(3, True, "Boo3")
    rows = DataframeDataset(burn_frame()[["int8", "string"]])
    assert rows.get(0) == {"int8": 1, "string": "Boo"} and type(rows.get(0)["int8"]) is int
    assert rows[2] == {"int8": 3, "string": "Boo3"}


@dataclasses.dataclass
class Maybe:
    name: str | None
    value: float | None
    count: int


def test_missing_values_and_columns_are_named():
    df = pd.DataFrame({"name": ["a", None], "value": [1.5, np.nan], "count": pd.array([1, None], dtype="Int64")})
    ds = DataframeDataset(df, Maybe)
    assert ds.get(0) == Maybe("a", 1.5, 1)
    with raises_exactly(DatasetError, "DataframeDataset(pandas) row 1: column 'count' is empty; expected a int "
                                      "(declare it `| None` to allow that)"):
        ds.get(1)
    assert DataframeDataset(df).get(1) == {"name": None, "value": None, "count": None}
    with raises_exactly(MissingColumnError, "DataframeDataset(pandas): column 'string' (field string) not found for "
                                            "PartialBurnRow; the columns are ['int32', 'bool', 'other']"):
        DataframeDataset(pd.DataFrame({"int32": [1], "bool": [True], "other": [0]}), PartialBurnRow)
    bad = pd.DataFrame({"int32": ["x"], "bool": [True], "string": ["s"]})
    with raises_exactly(DatasetError, "DataframeDataset(pandas) row 0: column 'int32': 'x' is not a valid int"):
        DataframeDataset(bad, PartialBurnRow).get(0)
    with raises_exactly(TypeError, "DataframeDataset: expected a pandas or polars DataFrame, got builtins.dict "
                                   "(pandas comes with `pip install 'burnlike[dataframe]'`)"):
        DataframeDataset({"a": [1]})
