"""`burnlike.data.dataset.table`: `TabularDataset`, feature and target tensors with their column
names, read from a CSV for classification (one label column, classes numbered by name or in the
order given) or regression (any number of float targets). `get` is None out of range, the batched
fetch gathers rows into `TabularItems` (whose length is the batch size) and refuses indices out of
range; CSV errors name the file, the line and the column."""

from __future__ import annotations

import pytest
import torch

from burnlike.data.dataset import (
    DatasetError,
    EmptySplitError,
    MissingColumnError,
    TabularDataset,
)
from burnlike.data.dataset.table import TabularItems
from tests.data.dataset.helpers import write_csv
from tests.helpers.expect import raises_exactly


# --- the dataset and its batched fetch ----------------------------------------------------------------------
def test_tabular_get_is_none_out_of_range_and_getitems_gathers_rows():
    data = TabularDataset(torch.arange(6.0).reshape(3, 2), torch.tensor([0, 1, 0]), ["x", "y"], ["label"], ["a", "b"])
    assert data.get(3) is None and data.get(-1) is None and data.get(2).features.tolist() == [4.0, 5.0]
    items = data.__getitems__([2, 0])
    assert isinstance(items, TabularItems) and len(items) == 2
    assert items.features.tolist() == [[4.0, 5.0], [0.0, 1.0]] and items.targets.tolist() == [0, 0]
    data = TabularDataset(torch.randn(7, 3), torch.arange(7) % 2, ["a", "b", "c"], ["y"], ["no", "yes"])
    items = data.__getitems__([6, 0, 2])
    assert len(items) == 3 and items.features.shape == (3, 3)  # the length of TabularItems is the batch size
    assert torch.equal(items.targets, torch.tensor([0, 0, 0]))


def test_tabular_dataset_checks_its_tensors_and_indices():
    with pytest.raises(ValueError, match=r"^3 feature rows but 4 targets$"):
        TabularDataset(torch.zeros(3, 2), torch.zeros(4), ["a", "b"], ["y"])
    ds = TabularDataset(torch.ones(3, 2, dtype=torch.float64), torch.zeros(3), ["a", "b"], ["y"])
    assert ds.features.dtype == torch.float32
    for bad in ([-1], [3], [0, 3]):
        with pytest.raises(IndexError, match=r"^index out of range for TabularDataset of length 3$"):
            ds.__getitems__(bad)


# --- reading a CSV ------------------------------------------------------------------------------------------
def test_tabular_csv_reads_feature_names_classes_and_regression_targets(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n1,10,cat\n3,10,dog\n5,10,cat\n")
    ds = TabularDataset.from_csv(path, "y")
    assert ds.feature_names == ["a", "b"] and ds.classes == ["cat", "dog"] and ds.task == "classification"
    assert ds.features.tolist() == [[1, 10], [3, 10], [5, 10]] and ds.targets.tolist() == [0, 1, 0]
    reg = TabularDataset.from_csv(path, ["a"], ["b"], task="regression")
    assert reg.task == "regression" and reg.targets.tolist() == [[1.0], [3.0], [5.0]]


def test_tabular_csv_reads_features_targets_and_skips_blank_lines(tmp_path):
    path = write_csv(tmp_path, "a;b;y\n1;2;cat\n\n3;4.5;dog\n5;6;cat\n")
    ds = TabularDataset.from_csv(path, "y", delimiter=";")
    assert ds.features.tolist() == [[1, 2], [3, 4.5], [5, 6]] and ds.features.dtype == torch.float32
    assert ds.targets.tolist() == [0, 1, 0] and ds.targets.dtype == torch.int64
    assert ds.classes == ["cat", "dog"] and ds.feature_names == ["a", "b"]
    # classes given: numbered in that order
    assert TabularDataset.from_csv(path, "y", classes=["dog", "cat"], delimiter=";").targets.tolist() == [1, 0, 1]
    items = ds.__getitems__([2, 0, 1])
    assert len(items) == 3 and items.targets.tolist() == [0, 0, 1]
    empty = ds.__getitems__([])
    assert len(empty) == 0 and empty.features.shape == (0, 2)


def test_tabular_csv_regression_takes_several_targets(tmp_path):
    path = write_csv(tmp_path, "x,u,v\n1,2,3\n4,5,6\n")
    ds = TabularDataset.from_csv(path, ["u", "v"], task="regression")
    assert ds.targets.tolist() == [[2, 3], [5, 6]] and ds.features.tolist() == [[1], [4]]
    with pytest.raises(ValueError, match=r"^classification takes one target column, got \['u', 'v'\]$"):
        TabularDataset.from_csv(path, ["u", "v"])


# --- CSV errors ---------------------------------------------------------------------------------------------
def test_tabular_dataset_from_csv_names_what_is_wrong(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a;b;label\n1;2;y\n\n3;4;x\n")
    data = TabularDataset.from_csv(path, "label", delimiter=";", classes=["y", "x"])
    assert data.features.tolist() == [[1.0, 2.0], [3.0, 4.0]] and data.targets.tolist() == [0, 1]
    assert data.targets.dtype == torch.int64 and data.classes == ["y", "x"]
    reg = TabularDataset.from_csv(path, ["a", "b"], features=[], task="regression", delimiter=";")
    assert reg.targets.tolist() == [[1.0, 2.0], [3.0, 4.0]] and reg.classes is None
    with raises_exactly(ValueError, "classification takes one target column, got ['a', 'b']"):
        TabularDataset.from_csv(path, ["a", "b"], delimiter=";")
    with raises_exactly(DatasetError, f"{path} line 2: label 'y' is not one of the classes ['x']"):
        TabularDataset.from_csv(path, "label", delimiter=";", classes=["x"])
    with raises_exactly(MissingColumnError, f"{path}: column 'c', 'd' not found; the columns are ['a', 'b', 'label']"):
        TabularDataset.from_csv(path, "d", features=["c"], delimiter=";")
    path.write_text("a,label\n1,2,3\n")
    with raises_exactly(DatasetError, f"{path} line 2: 3 values, expected 2"):
        TabularDataset.from_csv(path, "label")
    path.write_text("a,label\nx,1\n")
    with raises_exactly(DatasetError, f"{path} line 2: column 'a': 'x' is not a number"):
        TabularDataset.from_csv(path, "label", task="regression")
    path.write_text("a,label\n1,zz\n")
    with raises_exactly(DatasetError, f"{path} line 2: column 'label': 'zz' is not a number"):
        TabularDataset.from_csv(path, "label", task="regression")
    path.write_text("")
    with raises_exactly(EmptySplitError, f"{path}: empty file, expected a header row"):
        TabularDataset.from_csv(path, "label")
    with raises_exactly(ValueError, "3 feature rows but 2 targets"):
        TabularDataset(torch.zeros(3, 4), torch.zeros(2), ["a"] * 4, ["t"])
    ints = TabularDataset(torch.ones(2, 1, dtype=torch.int64), torch.zeros(2), ["a"], ["t"])
    assert ints.features.dtype == torch.float32
    with raises_exactly(IndexError, "index out of range for TabularDataset of length 2"):
        ints.__getitems__([0, 2])
    with raises_exactly(IndexError, "index out of range for TabularDataset of length 2"):
        ints.__getitems__([-1])


def test_tabular_csv_errors_name_line_column_empty_rows_and_task(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,y\n1,0\nx,1\n")
    with pytest.raises(DatasetError, match=r"t\.csv line 3: column 'a': 'x' is not a number"):
        TabularDataset.from_csv(path, "y")
    with pytest.raises(MissingColumnError, match="column 'label' not found; the columns are \\['a', 'y'\\]"):
        TabularDataset.from_csv(path, "label")
    path.write_text("a,y\n")
    with pytest.raises(EmptySplitError, match="no rows after the header"):
        TabularDataset.from_csv(path, "y")
    with pytest.raises(ValueError, match="task"):
        TabularDataset.from_csv(path, "y", task="ranking")


def test_tabular_csv_errors_name_the_file_line_and_column(tmp_path):
    empty = write_csv(tmp_path, "", "empty.csv")
    with pytest.raises(EmptySplitError, match=r"empty\.csv: empty file, expected a header row$"):
        TabularDataset.from_csv(empty, "y")
    two = write_csv(tmp_path, "a,y\n1,0\n", "two.csv")
    with pytest.raises(MissingColumnError, match=r"two\.csv: column 'b', 'z' not found; the columns are \['a', 'y'\]"):
        TabularDataset.from_csv(two, "z", features=["b"], task="regression")
    short = write_csv(tmp_path, "a,b,y\n1,2,0\n3,4\n", "short.csv")
    with pytest.raises(DatasetError, match=r"short\.csv line 3: 2 values, expected 3$"):
        TabularDataset.from_csv(short, "y")
    bad_target = write_csv(tmp_path, "a,y\n1,2\n3,x\n", "bad_target.csv")
    with pytest.raises(DatasetError, match=r"bad_target\.csv line 3: column 'y': 'x' is not a number$"):
        TabularDataset.from_csv(bad_target, "y", task="regression")
    label = write_csv(tmp_path, "a,y\n1,cat\n\n3,cow\n", "label.csv")
    with pytest.raises(DatasetError, match=r"^\S*label\.csv line 4: label 'cow' is not one of the classes \['cat'\]$"):
        TabularDataset.from_csv(label, "y", classes=["cat"])


def test_tabular_batched_fetch_is_also_the_list_of_items():
    data = TabularDataset(torch.arange(6.0).reshape(3, 2), torch.tensor([0, 1, 0]), ["x", "y"], ["label"], ["a", "b"])
    fetched = data.__getitems__([2, 0])
    assert isinstance(fetched, TabularItems) and len(fetched) == 2
    rows = [(item.features.tolist(), int(item.target)) for item in fetched]
    assert rows == [([4.0, 5.0], 0), ([0.0, 1.0], 0)]
