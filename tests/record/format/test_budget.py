"""`burnlike.record.format.budget`: the decoding budget, how many values a record may make a
decoder build (bytes alone don't bound the work: one byte can be an empty list). It refuses the
value past its limit; a real record fits with room to spare, and so does a module of thousands of
stateless modules (one value each); the limit derived from the module being loaded is tighter than
the one from the file's size."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from burnlike.record import CompactRecorder, DefaultRecorder, RecordError
from burnlike.record.format.budget import BASE, Budget
from tests.helpers.records import Net


def test_budget_refuses_the_value_past_its_limit() -> None:
    budget = Budget(3)
    budget.take(3)
    with pytest.raises(RecordError, match="more than 3 values"):
        budget.take()


def test_a_real_record_fits_its_budget(tmp_path: Path) -> None:
    path = Net().save_file(tmp_path / "m", DefaultRecorder())
    Net().load_file(path)  # the module's budget is far above what its record needs
    assert DefaultRecorder().load(path)


def test_many_stateless_modules_are_allowed_for_in_the_decoding_budget(tmp_path):
    """Each stateless module is a value in the record (Burn's nil): a module of 6,000 of them must
    load, however small its tensor count makes the budget."""
    model = nn.Sequential(nn.Linear(2, 2), *[nn.ReLU() for _ in range(6000)])
    path = CompactRecorder().save_module(model, tmp_path / "relus")
    loaded = nn.Sequential(nn.Linear(2, 2), *[nn.ReLU() for _ in range(6000)])
    CompactRecorder().load_module(loaded, path)
    assert torch.equal(loaded[0].weight, model[0].weight.half().float())


def test_budget_from_the_module_is_tighter_than_from_the_file_size(hostile: dict[str, Path]) -> None:
    budget = Budget.for_record(8 << 20, Net())
    assert budget.limit < BASE + 10_000 < Budget.for_record(8 << 20).limit
    with pytest.raises(RecordError, match=f"more than {budget.limit:,} values.*Net"):
        Net().load_file(hostile["8MB-empty-arrays.mpk"])
