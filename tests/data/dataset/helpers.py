"""Helpers for the tests of `burnlike.data.dataset` and its transforms: item dataclasses the row
readers fill (`Flagged`, `House`, `Pair`), small datasets (`Squares`, `AskedSquares`), a reference
of the shuffle Burn calls (`burn_shuffle`), `iter_items`, a CSV writer and the image decoders."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from burnlike.data.dataset import Dataset, column

DECODERS = ("auto", "pil", "torchvision")


@dataclasses.dataclass
class Flagged:
    name: str
    active: bool
    note: str | None = None
    extra: int = dataclasses.field(default=0, init=False)


@dataclasses.dataclass
class House:
    """Fields read from differently named columns (as the California housing CSV names them)."""

    income: float = column("MedInc")
    age: int = column("HouseAge")
    name: str = "?"
    note: str | None = None


@dataclasses.dataclass
class Pair:
    a: int
    b: str


class Squares(Dataset[int]):
    """Burn-style: only get/len."""

    def get(self, index):
        return index * index if 0 <= index < 5 else None

    def len(self):
        return 5


class AskedSquares:
    """A torch map-style dataset with a batched fetch that records what it was asked."""

    def __init__(self, n):
        self.n, self.asked = n, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i

    def __getitems__(self, indices):
        self.asked.append(list(indices))
        return torch.tensor([i * i for i in indices])


def iter_items(ds) -> list:
    """Everything `ds.iter()` yields (Burn's iterator: it stops at the first None)."""
    return list(ds.iter())


def burn_shuffle(values, rng):
    """rand's `SliceRandom::shuffle` as Burn calls it: for i in 0..n swap i with j uniform in 0..=i."""
    values = list(values)
    if len(values) <= 1:
        return values
    draws = rng.integers(0, np.arange(1, len(values) + 1)).tolist()  # j_i for i = 0..n-1, one call
    for i in range(len(values)):
        j = draws[i]
        assert 0 <= j <= i
        values[i], values[j] = values[j], values[i]
    return values


def write_csv(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
