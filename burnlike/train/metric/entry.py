"""Burn's metric entries (burn-train `metric/base.rs`): what one step's update of a metric reports
(`MetricEntry`, `SerializedEntry`, `NumericEntry`) and what a metric is (`MetricDefinition`,
`NumericAttributes`). A metrics renderer receives them (`burnlike.train.renderer`).

Burn's enum variants are class methods in Burn's casing: `NumericEntry::Value(v)` is
`NumericEntry.Value(v)`, `NumericEntry::Aggregated { aggregated_value, count }` is
`NumericEntry.Aggregated(aggregated_value=…, count=…)`. `MetricAttributes::Numeric(a)` is the
`NumericAttributes` itself and `MetricAttributes::None` is `None`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

__all__ = [
    "MetricDefinition",
    "MetricEntry",
    "MetricId",
    "NumericAttributes",
    "NumericEntry",
    "SerializedEntry",
    "format_float",
]


@dataclass(frozen=True)
class MetricId:
    """Burn's `MetricId`: the metric's name, the same across runs."""

    id: str  # the metric's name

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True)
class NumericAttributes:
    """Burn's `NumericAttributes { unit, higher_is_better }`; `higher_is_better` is None for a metric
    with no better direction (learning rate, speed)."""

    unit: str | None = None  # the unit shown after the value ("%"), or None
    higher_is_better: bool | None = True  # the metric's direction; None: neither


@dataclass(frozen=True)
class MetricDefinition:
    """Burn's `MetricDefinition { metric_id, name, description, attributes }`: `attributes` is the
    metric's `NumericAttributes`, or None (Burn's `MetricAttributes::None`)."""

    metric_id: MetricId  # the metric's id
    name: str  # the name shown
    description: str | None = None  # what it measures, or None
    attributes: NumericAttributes | None = None  # a numeric metric's unit and direction, or None


@dataclass(frozen=True)
class SerializedEntry:
    """Burn's `SerializedEntry { formatted, serialized }`: the text to show and the text to log."""

    formatted: str  # the text a renderer shows ("85.52 %")
    serialized: str  # the text a log line holds ("85.52,64")


@dataclass(frozen=True)
class MetricEntry:
    """Burn's `MetricEntry { metric_id, serialized_entry }`: one metric's state after a step."""

    metric_id: MetricId  # which metric
    serialized_entry: SerializedEntry  # its state, shown and logged


@dataclass(frozen=True)
class NumericEntry:
    """Burn's `NumericEntry::{Value(f64), Aggregated { aggregated_value, count }}`: `count` is None
    for a `Value`."""

    aggregated_value: float  # the value (a `Value`'s, or the mean over `count` items)
    count: int | None = None  # the items the mean is over; None for a `Value`

    @classmethod
    def Value(cls, value: float) -> NumericEntry:  # noqa: N802 - Burn's variant name
        """Burn's `NumericEntry::Value(v)`: a value on its own.

        Args:
            value: The value.
        """
        return cls(float(value))

    @classmethod
    def Aggregated(cls, aggregated_value: float, count: int) -> NumericEntry:  # noqa: N802 - Burn's variant name
        """Burn's `NumericEntry::Aggregated { aggregated_value, count }`: a mean and its weight.

        Args:
            aggregated_value: The mean.
            count: The items it is over.
        """
        return cls(float(aggregated_value), int(count))

    def current(self) -> float:
        """The value (Burn's `current()`)."""
        return self.aggregated_value

    def serialize(self) -> str:
        """`value` or `value,count`, as Burn's metric log lines hold them."""
        value = _rust_float(self.aggregated_value)
        return value if self.count is None else f"{value},{self.count}"

    @classmethod
    def deserialize(cls, entry: str) -> NumericEntry:
        """The entry a `serialize()` wrote (a `ValueError` names what doesn't parse).

        Args:
            entry: `value` or `value,count`.
        """
        values = entry.split(",")
        if len(values) == 1:
            return cls.Value(float(values[0]))
        if len(values) == 2:
            return cls.Aggregated(float(values[0]), int(values[1]))
        raise ValueError(f"invalid number of values for a numeric entry: {entry!r}")

    def better_than(self, other: NumericEntry, higher_is_better: bool) -> bool:
        """Burn's comparison: strictly greater when higher is better, else not greater.

        Args:
            other: The entry compared with.
            higher_is_better: The metric's direction.
        """
        return (self.current() > other.current()) == higher_is_better


def format_float(value: float, precision: int) -> str:
    """Burn's `format_float`: `precision` decimals, in scientific notation at or below
    0.1^(precision - 1) (zero and negatives included, as in Burn).

    Args:
        value: The number.
        precision: The decimals.
    """
    if math.isnan(value):
        return "NaN"
    if 0.1 ** (precision - 1) >= value:
        mantissa, exponent = f"{value:.{precision}e}".split("e")
        return f"{mantissa}e{int(exponent)}"  # Rust writes `1.00e-3`, not `1.00e-03`
    return f"{value:.{precision}f}"


def _rust_float(value: float) -> str:
    """`f64::to_string` (as Burn's log lines hold values): the shortest round-trip digits, never an
    exponent, no `.0` on whole numbers; `NaN`, `inf`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(float(value))
    if "e" in text:
        text = format(Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text
