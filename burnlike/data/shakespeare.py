"""Tiny Shakespeare as nanoGPT's shakespeare_char prepares it: one character stream, its sorted
characters as the vocabulary, the first 90% to train on and the last 10% to validate on.

The text is read from `<root>/shakespeare_char/input.txt` (`root`: `$BURNLIKE_DATA`, else `./data`,
as for MNIST); burnlike never downloads it. `ShakespeareChar.load(root).train(65)` is a
`TokenWindowsDataset` of 65-token windows (a model with a block size of 64 reads 64 and predicts 64).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from torch import Tensor

from burnlike.data.dataset.errors import DatasetError, DatasetNotFoundError
from burnlike.data.dataset.in_memory import data_root
from burnlike.data.dataset.token_windows import TokenWindowsDataset
from burnlike.data.text import CharVocab

__all__ = ["ShakespeareChar", "shakespeare_char_file"]

SOURCE = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"


def shakespeare_char_file(root: str | os.PathLike[str] | None = None) -> Path:
    """`<root>/shakespeare_char/input.txt` (root: `data_root(root)`).

    Args:
        root: The data folder (None: `$BURNLIKE_DATA`, else `./data`).
    """
    return data_root(root) / "shakespeare_char" / "input.txt"


@dataclass
class ShakespeareChar:
    """The corpus as ids (`tokens`, int64), its `vocab`, and where the train split ends (`split`)."""

    tokens: Tensor  # the whole corpus as int64 ids
    vocab: CharVocab  # the corpus's characters, sorted (nanoGPT's ids)
    split: int  # the first id of the validation split
    path: Path  # the file it was read from

    @classmethod
    def load(cls, root: str | os.PathLike[str] | None = None, train_fraction: float = 0.9) -> ShakespeareChar:
        """The corpus of `<root>/shakespeare_char/input.txt`.

        Args:
            root: The data folder (None: `$BURNLIKE_DATA`, else `./data`).
            train_fraction: The share of the text that is the train split (nanoGPT's 0.9).

        Raises:
            DatasetNotFoundError: No file there, saying where to get it.
            DatasetError: `train_fraction` outside (0, 1).
        """
        path = shakespeare_char_file(root)
        if not path.is_file():
            raise DatasetNotFoundError(f"Tiny Shakespeare: {path} not found. Put the text there (nanoGPT's "
                                       f"data/shakespeare_char/input.txt, from {SOURCE}), or point data.root "
                                       "($BURNLIKE_DATA) at the folder holding shakespeare_char/")
        return cls.from_text(path.read_text(encoding="utf-8"), train_fraction, path)

    @classmethod
    def from_text(cls, text: str, train_fraction: float = 0.9, path: Path = Path("<text>")) -> ShakespeareChar:
        """The corpus of `text`.

        Args:
            text: The whole text.
            train_fraction: The share of the text that is the train split.
            path: Where the text came from, for messages.

        Raises:
            DatasetError: `train_fraction` outside (0, 1).
        """
        if not 0.0 < train_fraction < 1.0:
            raise DatasetError(f"{path}: train_fraction must be in (0, 1), got {train_fraction}")
        vocab = CharVocab.from_text(text)
        return cls(vocab.encode_tensor(text), vocab, int(len(text) * train_fraction), path)

    def train(self, window: int) -> TokenWindowsDataset:
        """Every window of `window` tokens of the train split.

        Args:
            window: The window length (the model's block size + 1).

        Raises:
            DatasetError: The split is shorter than one window.
        """
        return self._windows(self.tokens[:self.split], window, "train")

    def valid(self, window: int) -> TokenWindowsDataset:
        """Every window of `window` tokens of the validation split.

        Args:
            window: The window length (the model's block size + 1).

        Raises:
            DatasetError: The split is shorter than one window.
        """
        return self._windows(self.tokens[self.split:], window, "validation")

    def _windows(self, tokens: Tensor, window: int, split: str) -> TokenWindowsDataset:
        dataset = TokenWindowsDataset(tokens, window)
        if dataset.len() == 0:
            raise DatasetError(f"{self.path}: the {split} split has {tokens.numel()} characters, fewer than one "
                               f"window of {window}")
        return dataset
