"""`burnlike.data.tabular`: `TabularBatcher`'s shift/scale constants (float32, scale > 0), its
`fit` from data (standard or min-max; a constant feature keeps scale 1 so nothing divides by zero,
small spreads are kept as they are), and batches that land on the device asked for without a copy
when there is nothing to do."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from burnlike.data import TabularBatch, TabularBatcher
from burnlike.data.dataset import TabularDataset
from burnlike.data.dataset.table import TabularItems
from tests.helpers.expect import raises_exactly


# --- constants, fit and batches together --------------------------------------------------------------------
def test_tabular_batcher_fit_constants_refusals_and_no_copy_batch():
    batcher = TabularBatcher([1, 2], [2, 4])
    assert batcher.shift.dtype == torch.float32 and batcher.scale.dtype == torch.float32
    with raises_exactly(ValueError, "scale values must be > 0"):
        TabularBatcher(scale=[1.0, 0.0])
    x = torch.tensor([[1.0, 5.0, 2.0], [3.0, 5.0, 2.5], [2.0, 5.0, 3.0]])
    fit = TabularBatcher.fit(x, "min_max")
    assert fit.shift.tolist() == [1.0, 5.0, 2.0] and fit.scale.tolist() == [2.0, 1.0, 1.0]  # constant: scale 1
    assert TabularBatcher.fit(torch.tensor([[0.0], [0.5]]), "min_max").scale.tolist() == [0.5]  # ranges below 1 kept
    with raises_exactly(ValueError, "how must be 'standard' or 'min_max', got 'max'"):
        TabularBatcher.fit(x, "max")
    items = TabularItems(torch.ones(2, 2), torch.zeros(2))
    assert TabularBatcher().batch(items, device="meta").inputs.device.type == "meta"
    assert TabularBatcher().batch(items).inputs is items.features  # nothing to do: no copy, no move


# --- constants ----------------------------------------------------------------------------------------------
def test_tabular_batcher_constants_are_float32_and_positive():
    b = TabularBatcher(shift=torch.tensor([1.0, 2.0], dtype=torch.float64), scale=np.array([2.0, 4.0]))
    assert b.shift.dtype == torch.float32 and b.scale.dtype == torch.float32
    items = TabularDataset(torch.tensor([[3.0, 6.0]]), torch.tensor([1]), ["a", "b"], ["y"]).__getitems__([0])
    out = b.batch(items)
    assert out.inputs.dtype == torch.float32 and out.inputs.tolist() == [[1.0, 1.0]]
    for scale in ([1.0, 0.0], [0.0], [-1.0]):
        with pytest.raises(ValueError, match=r"^scale values must be > 0$"):
            TabularBatcher(scale=scale)


# --- fit ----------------------------------------------------------------------------------------------------
def test_tabular_batcher_fit_min_max_and_small_spreads():
    x = torch.tensor([[1.0, 10.0, 0.1], [3.0, 30.0, 0.3], [2.0, 50.0, 0.2]])
    b = TabularBatcher.fit(x, "min_max")
    assert b.shift.tolist() == pytest.approx([1.0, 10.0, 0.1]) and b.scale.tolist() == pytest.approx([2.0, 40.0, 0.2])
    s = TabularBatcher.fit(x)  # a std below 1 stays itself; only a constant feature gets 1
    assert s.scale.tolist() == pytest.approx(x.std(0, unbiased=False).tolist())
    assert TabularBatcher.fit(torch.ones(4, 1)).scale.tolist() == [1.0]
    with pytest.raises(ValueError, match=r"^how must be 'standard' or 'min_max', got 'z'$"):
        TabularBatcher.fit(x, "z")


def test_fitted_batcher_standardises_a_csv_dataset_batched_or_item_by_item(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n1,10,cat\n3,10,dog\n5,10,cat\n")
    ds = TabularDataset.from_csv(path, "y")
    batcher = TabularBatcher.fit(ds)
    batch = batcher.batch(ds.__getitems__([2, 0]))
    assert torch.allclose(batch.inputs, torch.tensor([[1.2247, 0.0], [-1.2247, 0.0]]), atol=1e-4)  # b constant: scale 1
    assert batch.targets.tolist() == [0, 0]
    slow = batcher.batch([ds[2], ds[0]])
    assert torch.equal(slow.inputs, batch.inputs) and torch.equal(slow.targets, batch.targets)
    reg = TabularDataset.from_csv(path, ["a"], ["b"], task="regression")
    minmax = TabularBatcher.fit(reg.features.new_tensor([[0.0], [4.0]]), "min_max").batch(reg.__getitems__([0]))
    assert minmax.inputs.tolist() == [[2.5]]


# --- batches ------------------------------------------------------------------------------------------------
def test_tabular_batch_goes_to_the_device_asked_for():
    ds = TabularDataset(torch.ones(2, 1), torch.tensor([0, 1]), ["a"], ["y"])
    batch = TabularBatcher().batch(ds.__getitems__([0, 1]), device="meta")
    assert isinstance(batch, TabularBatch)
    assert batch.inputs.device.type == "meta" and batch.targets.device.type == "meta"
    assert TabularBatcher().batch(ds.__getitems__([0]), device=None).inputs.device.type == "cpu"
