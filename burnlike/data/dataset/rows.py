"""Rows (CSV records, JSON objects, SQLite rows, MessagePack maps/arrays) into typed items.

Burn deserializes each row into the item struct with serde; here the item type is a dataclass whose
field annotations (`int`, `float`, `str`, `bool`, optionals, anything else passed through) convert
the values, and `column("Name")` plays serde's `rename`. Without an item type, rows stay dicts.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar, Union

from burnlike.data.dataset.errors import DatasetError, MissingColumnError

T = TypeVar("T")

__all__ = ["ItemReader", "column", "encode_labels", "to_row"]

_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


def column(name: str, **kwargs: Any) -> Any:
    """A dataclass field read from column `name` (serde's `#[serde(rename = "...")]`).

    Args:
        name: The column's name.
        **kwargs: `dataclasses.field`'s other arguments (`default` ...).
    """
    return dataclasses.field(metadata={"column": name}, **kwargs)


def to_row(item: Any) -> Any:
    """What a row stores for `item`: a dataclass as a map keyed by column names (renames applied,
    as serde's do when writing), anything else as it is.

    Args:
        item: The item to store.
    """
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {f.metadata.get("column", f.name): _plain(getattr(item, f.name)) for f in dataclasses.fields(item)}
    return item


def _plain(value: Any) -> Any:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value


def _optional(annotation: Any) -> tuple[Any, bool]:
    """`X | None` -> (X, True); anything else -> (annotation, False)."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0], True
    return annotation, False


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError
        return int(value)
    return int(value)  # int, or a str such as " 12"


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError
    return float(value)


def _to_str(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if not isinstance(value, (str, int, float)):
        raise ValueError
    return str(value)


_CONVERTERS: dict[Any, Callable[[Any], Any]] = {bool: _to_bool, int: _to_int, float: _to_float, str: _to_str}


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    column: str
    annotation: Any
    convert: Callable[[Any], Any] | None
    optional: bool
    required: bool


class ItemReader(Generic[T]):
    """Builds items of `item_type` (a dataclass, or `None` for plain dicts) from rows of `source`.

    Args:
        item_type: The dataclass to build (None: plain dicts).
        source: The file the rows come from, for error messages.

    Attributes:
        item_type: The dataclass to build (None: plain dicts).
        source: The file the rows come from.
        fields: The dataclass's fields: column, type, whether optional or required.

    Raises:
        TypeError: `item_type` is not a dataclass.
    """

    def __init__(self, item_type: type[T] | None, source: str) -> None:
        self.item_type = item_type
        self.source = source
        self.fields: list[_Field] = []
        if item_type is None:
            return
        if not (isinstance(item_type, type) and dataclasses.is_dataclass(item_type)):
            raise TypeError(f"item_type must be a dataclass (or None for dict rows), got {item_type!r}")
        hints = typing.get_type_hints(item_type)
        for f in dataclasses.fields(item_type):
            if not f.init:
                continue
            annotation, optional = _optional(hints.get(f.name, Any))
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            self.fields.append(_Field(f.name, f.metadata.get("column", f.name), annotation,
                                      _CONVERTERS.get(annotation), optional, required))

    def columns(self) -> list[str]:
        """The columns the item type reads (all of them are kept for dict rows)."""
        return [f.column for f in self.fields]

    def check_columns(self, available: Sequence[str]) -> None:
        """Every required field's column must be present: one error naming all the missing ones.

        Args:
            available: The columns the source has.

        Raises:
            MissingColumnError: Some are missing.
        """
        have = set(available)
        missing = [f for f in self.fields if f.required and f.column not in have]
        if missing:
            names = ", ".join(f"{f.column!r} (field {f.name})" for f in missing)
            raise MissingColumnError(f"{self.source}: column {names} not found for {getattr(self.item_type, '__name__', 'rows')}; "
                                     f"the columns are {list(available)}")

    def _value(self, f: _Field, value: Any, where: str) -> Any:
        if value is None or (f.optional and isinstance(value, str) and value == ""):
            if f.optional:
                return None
            raise DatasetError(f"{self.source}{where}: column {f.column!r} is empty; expected a "
                               f"{getattr(f.annotation, '__name__', f.annotation)} (declare it `| None` to allow that)")
        if f.convert is None:
            return value
        try:
            return f.convert(value)
        except (ValueError, TypeError, UnicodeDecodeError):
            raise DatasetError(f"{self.source}{where}: column {f.column!r}: {value!r} is not a valid "
                               f"{f.annotation.__name__}") from None

    def from_mapping(self, row: Mapping[str, Any], where: str = "") -> T | dict[str, Any]:
        """An item from named values.

        Args:
            row: Column name → value.
            where: Where the row is, for error messages (" line 3").
        """
        if self.item_type is None:
            return dict(row)
        kwargs = {}
        for f in self.fields:
            if f.column in row:
                kwargs[f.name] = self._value(f, row[f.column], where)
            elif f.required:
                raise MissingColumnError(f"{self.source}{where}: column {f.column!r} (field {f.name}) not found; "
                                         f"the row has {list(row)}")
        return self.item_type(**kwargs)

    def from_sequence(self, row: Sequence[Any], where: str = "") -> T | list[Any]:
        """An item from positional values, in field order (how Burn's `rmp_serde::to_vec` writes a struct).

        Args:
            row: The values.
            where: Where the row is, for error messages.
        """
        if self.item_type is None:
            return list(row)
        if len(row) < sum(f.required for f in self.fields) or len(row) > len(self.fields):
            raise DatasetError(f"{self.source}{where}: {len(row)} values for the {len(self.fields)} fields of "
                               f"{self.item_type.__name__} ({', '.join(f.name for f in self.fields)})")
        return self.item_type(**{f.name: self._value(f, v, where) for f, v in zip(self.fields, row)})


def encode_labels(labels: Sequence[str], classes: Sequence[str] | None, source: str,
                  lines: Sequence[int] | None = None) -> tuple[list[int], list[str]]:
    """Class ids for label strings, and the class names.

    Labels that are all non-negative integers (and no `classes` given) are ids as written, the
    classes "0".."max"; otherwise they are names, numbered in `classes` order (sorted by default).

    Args:
        labels: The labels as read.
        classes: The class names in id order (None: from the labels).
        source: The file, for error messages.
        lines: Each label's line in the file, for error messages (None: positions).

    Raises:
        DatasetError: A label not among `classes`.
    """
    labels = [label.strip() for label in labels]
    if classes is None and labels and all(label.isdigit() for label in labels):
        ids = [int(label) for label in labels]
        return ids, [str(i) for i in range(max(ids) + 1)]
    names = [str(c) for c in classes] if classes is not None else sorted(set(labels))
    index = {name: i for i, name in enumerate(names)}
    ids = []
    for n, label in enumerate(labels):
        if label not in index:
            where = f" line {lines[n]}" if lines is not None else ""
            raise DatasetError(f"{source}{where}: label {label!r} is not one of the classes {names}")
        ids.append(index[label])
    return ids, names
