"""`burnlike.data.dataset.in_memory`: `InMemDataset`, a list of items with Burn's `get`/`len`
(None out of range, `IndexError` naming the length for `ds[i]`), filled from another dataset, a
CSV file or a JSON-lines file. Rows become the item dataclass's fields (or stay plain dicts and
lists without one); blank lines are skipped, a BOM is read and quoted line breaks kept; every error
names the file, the line and the column."""

from __future__ import annotations

import pytest

from burnlike.data import InMemDataset
from burnlike.data.dataset import (
    DatasetError,
    DatasetNotFoundError,
    EmptySplitError,
    MissingColumnError,
    TextCsvDataset,
)
from tests.data.dataset.helpers import Flagged, House, Pair, Squares, write_csv
from tests.helpers.expect import raises_exactly


# --- the in-memory dataset ----------------------------------------------------------------------------------
def test_in_mem_dataset_get_len_from_dataset_and_index_error():
    ds = InMemDataset(["a", "b"])
    assert (ds.get(1), ds.get(2), ds.get(-1), len(ds), ds.items) == ("b", None, None, 2, ["a", "b"])
    assert InMemDataset.from_dataset(Squares()).items == [0, 1, 4, 9, 16]
    with pytest.raises(IndexError):
        ds[2]
    ints = InMemDataset([1, 2])
    assert ints.get(2) is None and ints.get(1) == 2
    with raises_exactly(IndexError, "index 2 is out of range for InMemDataset of length 2"):
        ints[2]


# --- CSV rows -----------------------------------------------------------------------------------------------
def test_csv_rows_become_typed_items(tmp_path):
    path = tmp_path / "houses.csv"
    path.write_text("HouseAge,MedInc,name,note\n12,3.5,a,\n40, 1.25 ,b,old\n")
    ds = InMemDataset.from_csv(path, House)
    assert ds.items == [House(3.5, 12, "a", None), House(1.25, 40, "b", "old")]
    assert InMemDataset.from_csv(path).items[1] == {"HouseAge": "40", "MedInc": " 1.25 ", "name": "b", "note": "old"}
    tsv = tmp_path / "h.tsv"
    tsv.write_text("12\t3.5\n")
    assert InMemDataset.from_csv(tsv, has_headers=False, delimiter="\t").items == [["12", "3.5"]]


def test_csv_rows_keep_going_after_blank_lines_and_name_missing_columns(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("name;active\n'a;b';yes\n\nc;no\n")
    items = InMemDataset.from_csv(path, Flagged, delimiter=";", quotechar="'").items
    assert [(i.name, i.active) for i in items] == [("a;b", True), ("c", False)]
    path.write_text("a,1\n\nb,0\n")
    assert [(i.name, i.active) for i in InMemDataset.from_csv(path, Flagged, has_headers=False).items] ==\
        [("a", True), ("b", False)]
    path.write_text("title,other\nx,y\n")
    with raises_exactly(MissingColumnError, f"{path}: column 'name' (field name), 'active' (field active) not found "
                                            "for Flagged; the columns are ['title', 'other']"):
        InMemDataset.from_csv(path, Flagged)
    with raises_exactly(TypeError, "item_type must be a dataclass (or None for dict rows), got <class 'int'>"):
        InMemDataset.from_csv(path, int)


def test_open_text_takes_a_bom_and_keeps_line_breaks_inside_quotes(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b'\xef\xbb\xbfa,b\r\n"x\r\ny",2\r\n')
    assert InMemDataset.from_csv(path).items == [{"a": "x\r\ny", "b": "2"}]
    with pytest.raises(DatasetNotFoundError, match=r"^CSV file \S+ not found \(it is a folder\)$"):
        InMemDataset.from_csv(tmp_path)
    with pytest.raises(DatasetNotFoundError, match=r"^CSV file \S+missing\.csv not found$"):
        TextCsvDataset.from_csv(tmp_path / "missing.csv")


def test_csv_errors_name_the_file_line_and_column(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("MedInc,name\n3.5,a\n")
    with pytest.raises(MissingColumnError, match=r"h\.csv: column 'HouseAge' \(field age\) not found.*MedInc"):
        InMemDataset.from_csv(path, House)
    path.write_text("MedInc,HouseAge\n3.5,12\n2.0,old\n")
    with pytest.raises(DatasetError, match=r"h\.csv line 3: column 'HouseAge': 'old' is not a valid int"):
        InMemDataset.from_csv(path, House)
    path.write_text("MedInc,HouseAge\n3.5\n")
    with pytest.raises(DatasetError, match="line 2: 1 values, expected 2"):
        InMemDataset.from_csv(path, House)
    path.write_text("")
    with pytest.raises(EmptySplitError, match="empty file"):
        InMemDataset.from_csv(path, House)
    with pytest.raises(DatasetNotFoundError, match="CSV file .*nope.csv not found"):
        InMemDataset.from_csv(tmp_path / "nope.csv")
    assert isinstance(DatasetNotFoundError("x"), FileNotFoundError)


def test_headerless_csv_errors_name_the_line(tmp_path):
    path = write_csv(tmp_path, "1,a\nx,b\n")
    with pytest.raises(DatasetError, match=r"t\.csv line 2: column 'a': 'x' is not a valid int$"):
        InMemDataset.from_csv(path, Pair, has_headers=False)


# --- JSON lines ---------------------------------------------------------------------------------------------
def test_json_rows_become_typed_items_and_bad_lines_are_named(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"MedInc": 2, "HouseAge": 3}\n\n{"MedInc": 1.5, "HouseAge": 4.0, "extra": 1}\n')
    assert InMemDataset.from_json_rows(path, House).items == [House(2.0, 3), House(1.5, 4)]
    assert InMemDataset.from_json_rows(path).items[0] == {"MedInc": 2, "HouseAge": 3}
    path.write_text('{"MedInc": 2}\n[1, 2]\n')
    with pytest.raises(MissingColumnError, match="line 1: column 'HouseAge'"):
        InMemDataset.from_json_rows(path, House)
    path.write_text('{"MedInc": 2, "HouseAge": 1}\n{oops\n')
    with pytest.raises(DatasetError, match="line 2: not valid JSON"):
        InMemDataset.from_json_rows(path, House)


def test_json_rows_errors_name_the_line_and_untyped_rows_stay_plain(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"name": "a", "active": true}\n[1, 2]\n')
    with raises_exactly(DatasetError, f"{path} line 2: expected a JSON object for Flagged, got list"):
        InMemDataset.from_json_rows(path, Flagged)
    assert InMemDataset.from_json_rows(path).items == [{"name": "a", "active": True}, [1, 2]]  # no item type: as is
    with raises_exactly(DatasetNotFoundError, f"JSON lines file {tmp_path / 'none.jsonl'} not found"):
        InMemDataset.from_json_rows(tmp_path / "none.jsonl")
    path.write_text('{"name": "a", "active": null}\n')
    with raises_exactly(DatasetError, f"{path} line 1: column 'active' is empty; expected a bool (declare it `| None` "
                                      "to allow that)"):
        InMemDataset.from_json_rows(path, Flagged)
    path.write_text('{"name": "a", "active": true, "note": null}\n')
    assert InMemDataset.from_json_rows(path, Flagged).items[0].note is None
