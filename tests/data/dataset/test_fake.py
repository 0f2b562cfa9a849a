"""`burnlike.data.dataset.fake`: `FakeDataset`, Burn's dataset of made-up items. Items follow the
dataclass's field types (nested dataclasses, containers, optionals, enums, literals), the same seed
gives the same items, a generator function makes any other kind, and a type it can't fill is a
`TypeError` naming the field."""

from __future__ import annotations

import dataclasses
import enum
import random
from typing import Any, Literal, Optional

import pytest

from burnlike.data import DataLoaderBuilder
from burnlike.data.dataset import FakeDataset, ShuffledDataset
from tests.helpers.expect import raises_exactly


class Color(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass
class Point:
    x: float
    y: float


@dataclasses.dataclass
class Record:
    id: int
    name: str
    active: bool
    score: float
    blob: bytes
    tags: list[str]
    pair: tuple[int, str]
    counts: dict[str, int]
    note: str | None
    color: Color
    split: Literal["train", "test"]
    where: Point
    derived: int = dataclasses.field(default=7, init=False)


def test_items_follow_the_field_types_and_the_seed():
    ds = FakeDataset(50, Record, seed=3)
    assert ds.len() == 50 and ds.get(50) is None
    for item in ds.iter():
        assert isinstance(item, Record)
        assert isinstance(item.id, int) and -(2**31) <= item.id < 2**31
        assert isinstance(item.name, str) and 5 <= len(item.name) <= 20 and item.name.isalnum()
        assert isinstance(item.active, bool) and 0.0 <= item.score < 1.0
        assert isinstance(item.blob, bytes) and len(item.blob) <= 16
        assert all(isinstance(t, str) for t in item.tags) and len(item.tags) <= 5
        assert isinstance(item.pair[0], int) and isinstance(item.pair[1], str) and len(item.pair) == 2
        assert all(isinstance(k, str) and isinstance(v, int) for k, v in item.counts.items())
        assert item.note is None or isinstance(item.note, str)
        assert item.color in Color and item.split in ("train", "test")
        assert isinstance(item.where, Point) and item.derived == 7
    notes = {item.note is None for item in ds.iter()}
    assert notes == {True, False}  # both branches of an optional over 50 items
    assert FakeDataset(50, Record, seed=3).items == ds.items
    assert FakeDataset(50, Record, seed=4).items != ds.items


class Sorted:
    def batch(self, items, device=None):
        return sorted(items)


def test_plain_types_generators_and_a_dataloader():
    assert all(isinstance(v, int) for v in FakeDataset(5, int).iter())
    assert all(isinstance(v, list) for v in FakeDataset(5, list[float]).iter())
    squares = FakeDataset(4, lambda rng: rng.randint(0, 9) ** 2, seed=1)
    expected_rng = random.Random(1)
    assert squares.items == [expected_rng.randint(0, 9) ** 2 for _ in range(4)]
    assert len(FakeDataset(0, Record)) == 0
    loader = DataLoaderBuilder(Sorted()).batch_size(3).build(ShuffledDataset(FakeDataset(6, int), 0))
    assert sorted(v for batch in loader for v in batch) == sorted(FakeDataset(6, int).items)


@dataclasses.dataclass
class Unfillable:
    ok: int
    anything: Any


@dataclasses.dataclass
class Opaque:
    handle: object


def test_unsupported_types_and_sizes_are_named():
    with raises_exactly(TypeError, "FakeDataset: Unfillable.anything is annotated Any; give it a concrete type "
                                   "or pass a generator"):
        FakeDataset(0, Unfillable)
    with pytest.raises(TypeError, match=r"can't make up a value for Opaque.handle of type <class 'object'>"):
        FakeDataset(2, Opaque)
    with raises_exactly(TypeError, "FakeDataset: can't make up a value for object of type <class 'object'>; supported: "
                                   "int, float, bool, str, bytes, Enum, Literal, X | None, list, tuple, set, dict and "
                                   "dataclasses of these (or pass a generator)"):
        FakeDataset(2, object)
    with raises_exactly(ValueError, "size must be an int >= 0, got -1"):
        FakeDataset(-1, int)
    with raises_exactly(TypeError, "item_type must be a type or a function of a random.Random, got 3"):
        FakeDataset(1, 3)  # type: ignore[call-overload]


def test_an_optional_unsupported_type_fails_for_no_items_every_time():
    """With no items the type is still tried once, from a fixed seed, so the refusal is the same on every
    call (a fresh random draw would make up None half of the time and accept it)."""
    for _ in range(64):
        with raises_exactly(TypeError, "FakeDataset: Optional is annotated Any; give it a concrete type or pass a "
                                       "generator"):
            FakeDataset(0, Optional[Any])  # noqa: UP045 - the spelling whose name the message shows
