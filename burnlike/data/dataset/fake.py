"""Burn's `FakeDataset`: `size` items made up when the dataset is built, for tests and benchmarks.

Burn fills it with the `fake` crate (`Faker.fake()` for an item type deriving `Dummy`). Here the
item type is a dataclass (or a plain type) and each field gets a random value of its annotated type
from one seeded `random.Random`, so the same seed gives the same items; a function
`generator(rng) -> item` makes items of any other kind.

Values by type: `int` uniform over the 32-bit signed range, `float` uniform in [0, 1), `bool` a
coin flip, `str` 5 to 20 ASCII letters and digits, `bytes` 0 to 16 random bytes; `list[X]`,
`tuple[X, ...]`, `set[X]` and `dict[K, V]` hold 0 to 5 elements; `X | None` is `None` one time in
two; an `Enum` or `Literal` picks a member; a nested dataclass is filled the same way.
"""

from __future__ import annotations

import dataclasses
import enum
import random
import string
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, Union

from burnlike.data.dataset.in_memory import InMemDataset

T = TypeVar("T")

__all__ = ["FakeDataset", "fake_value"]

_CHARS = string.ascii_letters + string.digits
_MAX_LEN = 5  # elements in a generated list, tuple, set or dict


def fake_value(annotation: Any, rng: random.Random, where: str = "item") -> Any:
    """A random value of the type `annotation` (see the module's docstring for the ranges).

    Args:
        annotation: The type.
        rng: The random source.
        where: The field's name, for the `TypeError` raised for a type it can't make up.
    """
    if annotation is Any:
        raise TypeError(f"FakeDataset: {where} is annotated Any; give it a concrete type or pass a generator")
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) < len(args) and rng.random() < 0.5:
            return None
        return fake_value(rng.choice(options), rng, where)
    if origin is typing.Literal:
        return rng.choice(args)
    if origin in (list, set, frozenset, tuple, dict) or annotation in (list, set, frozenset, tuple, dict):
        return _container(origin or annotation, args, rng, where)
    if annotation is bool:
        return rng.random() < 0.5
    if annotation is int:
        return rng.randrange(-(2**31), 2**31)
    if annotation is float:
        return rng.random()
    if annotation is str:
        return "".join(rng.choices(_CHARS, k=rng.randint(5, 20)))
    if annotation is bytes:
        return rng.randbytes(rng.randint(0, 16))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return rng.choice(list(annotation))
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return _dataclass(annotation, rng)
    raise TypeError(f"FakeDataset: can't make up a value for {where} of type {annotation!r}; "
                    "supported: int, float, bool, str, bytes, Enum, Literal, X | None, list, tuple, set, dict "
                    "and dataclasses of these (or pass a generator)")


def _container(kind: Any, args: tuple[Any, ...], rng: random.Random, where: str) -> Any:
    if kind is dict:
        key, value = args if args else (str, int)
        return {fake_value(key, rng, f"{where} key"): fake_value(value, rng, f"{where} value")
                for _ in range(rng.randint(0, _MAX_LEN))}
    if kind is tuple and args and args[-1] is not Ellipsis:
        return tuple(fake_value(a, rng, f"{where}[{i}]") for i, a in enumerate(args))
    element = args[0] if args else int
    values = [fake_value(element, rng, f"{where}[]") for _ in range(rng.randint(0, _MAX_LEN))]
    return kind(values)


def _dataclass(item_type: type[T], rng: random.Random) -> T:
    hints = typing.get_type_hints(item_type)
    kwargs = {f.name: fake_value(hints.get(f.name, Any), rng, f"{item_type.__name__}.{f.name}")
              for f in dataclasses.fields(item_type) if f.init}  # type: ignore[arg-type]
    return item_type(**kwargs)


class FakeDataset(InMemDataset[T]):
    """`FakeDataset::<I>::new(size)` is `FakeDataset(size, I)`: `size` items of `item_type` made up
    from `seed` (see the module's docstring), or `generator(rng)`'s return values when `item_type`
    is a function. The items are made once, here, and kept in memory (Burn's `InMemDataset`).

    Args:
        size: The number of items, >= 0.
        item_type: A dataclass (or other annotated type) to make up, or a generator `rng -> item`.
        seed: The random seed (None: a fresh one each time).

    Raises:
        ValueError: A negative size.
        TypeError: A field type it can't make up.
    """

    def __init__(self, size: int, item_type: type[T] | Callable[[random.Random], T], seed: int | None = 0) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"size must be an int >= 0, got {size!r}")
        rng = random.Random(seed)
        if isinstance(item_type, type) or typing.get_origin(item_type) is not None:
            where = getattr(item_type, "__name__", str(item_type))
            make: Callable[[random.Random], Any] = lambda r: fake_value(item_type, r, where)  # noqa: E731
            if size == 0:
                fake_value(item_type, random.Random(0), where)  # an unsupported type fails even for no items
        elif callable(item_type):
            make = item_type
        else:
            raise TypeError(f"item_type must be a type or a function of a random.Random, got {item_type!r}")
        super().__init__(make(rng) for _ in range(size))
