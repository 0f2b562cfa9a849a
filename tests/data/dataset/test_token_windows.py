"""`burnlike.data.dataset.token_windows`: every window of `size` consecutive tokens of one stream,
item by item (Burn's `get`/`len`) and a batch at once (one `[B, size]` tensor)."""

import pytest
import torch

from burnlike.data.dataset import TokenWindows, TokenWindowsDataset


def test_window_i_is_tokens_i_to_i_plus_size_and_there_are_len_minus_size_plus_one():
    stream = torch.arange(100, 110)
    ds = TokenWindowsDataset(stream, 4)
    assert ds.len() == len(ds) == 7
    for i in range(7):
        assert ds.get(i).tolist() == list(range(100 + i, 104 + i))
    assert ds.get(7) is None and ds.get(-1) is None
    with pytest.raises(IndexError):
        ds[7]


def test_a_batched_fetch_is_the_items_stacked_in_the_order_asked():
    ds = TokenWindowsDataset(torch.arange(20, dtype=torch.int16), 3)
    batch = ds.__getitems__([5, 0, 17])
    assert isinstance(batch, TokenWindows) and len(batch) == 3
    assert batch.tensor.dtype == torch.int64 and batch.tensor.tolist() == [[5, 6, 7], [0, 1, 2], [17, 18, 19]]
    assert [row.tolist() for row in batch] == [ds[5].tolist(), ds[0].tolist(), ds[17].tolist()]


@pytest.mark.parametrize("index", [18, -1])
def test_a_batched_fetch_past_either_end_names_the_index(index):
    ds = TokenWindowsDataset(torch.arange(20), 3)
    with pytest.raises(IndexError, match=f"index {index} is out of range for TokenWindowsDataset of length 18"):
        ds.__getitems__([0, index])


def test_a_stream_shorter_than_a_window_has_no_windows():
    assert TokenWindowsDataset(torch.arange(3), 4).len() == 0
    assert TokenWindowsDataset(torch.arange(4), 4).len() == 1


@pytest.mark.parametrize(("tokens", "size", "message"), [
    (torch.zeros(2, 3, dtype=torch.long), 2, "tokens must be a 1-D integer tensor"),
    (torch.zeros(5), 2, "tokens must be a 1-D integer tensor, got torch.float32"),
    (torch.arange(5), 0, "size must be an integer >= 1, got 0"),
])
def test_bad_arguments_are_refused_naming_them(tokens, size, message):
    with pytest.raises(ValueError, match=message):
        TokenWindowsDataset(tokens, size)
