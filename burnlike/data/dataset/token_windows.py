"""`TokenWindowsDataset`: every window of `size` consecutive tokens of one token stream.

A language model's training items (nanoGPT's `get_batch`): window `i` is tokens `i .. i + size`,
so a model reading its first `size - 1` tokens learns to predict the last `size - 1` (the batcher,
`burnlike.data.TokenWindowsBatcher`, shifts them). Burn's `WindowsDataset` over the tokens gives the
same windows as lists of items; this one keeps the stream as one tensor and fetches a whole batch of
windows with one gather, so a batch costs no Python per token.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from burnlike.checks import positive_int
from burnlike.data.dataset.base import BatchedItems, Dataset

__all__ = ["TokenWindows", "TokenWindowsDataset"]


class TokenWindows(BatchedItems[Tensor]):
    """A batch of windows fetched at once: `tensor` is `[B, size]`; as a sequence, its rows.

    Args:
        tensor: The windows, `[B, size]` int64.

    Attributes:
        tensor: The windows, `[B, size]` int64.
    """

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor

    def __len__(self) -> int:
        return int(self.tensor.shape[0])

    def item(self, index: int) -> Tensor:
        return self.tensor[index]


class TokenWindowsDataset(Dataset[Tensor]):
    """The `len(tokens) - size + 1` windows of `size` tokens of a 1-D integer tensor; item `i` is
    `tokens[i : i + size]` (int64).

    Args:
        tokens: The token stream: a 1-D integer tensor or a sequence of ints.
        size: The window length, >= 1.

    Attributes:
        tokens: The stream, int64.
        size: The window length.

    Raises:
        ValueError: Tokens that are not a 1-D integer stream, or a size below 1.
    """

    def __init__(self, tokens: Tensor | Sequence[int], size: int) -> None:
        stream = torch.as_tensor(tokens)
        if stream.dim() != 1 or stream.dtype.is_floating_point or stream.dtype == torch.bool:
            raise ValueError(f"TokenWindowsDataset: tokens must be a 1-D integer tensor, got {stream.dtype} "
                             f"of shape {tuple(stream.shape)}")
        positive_int(size, "TokenWindowsDataset: size")
        self.tokens = stream.to(torch.int64)
        self.size = size
        self._offsets = torch.arange(size)

    def len(self) -> int:
        return max(int(self.tokens.numel()) - self.size + 1, 0)

    def get(self, index: int) -> Tensor | None:
        if not 0 <= index < self.len():
            return None
        return self.tokens[index:index + self.size]

    def __getitems__(self, indices: Sequence[int]) -> TokenWindows:
        """The windows at `indices` as one `[B, size]` tensor (one gather)."""
        starts = torch.as_tensor(indices, dtype=torch.int64)
        n = self.len()
        if starts.numel() and (int(starts.min()) < 0 or int(starts.max()) >= n):
            bad = next(i for i in indices if not 0 <= i < n)
            raise IndexError(f"index {bad} is out of range for TokenWindowsDataset of length {n}")
        return TokenWindows(self.tokens[starts.unsqueeze(1) + self._offsets])
