"""Argument checks shared by the whole package, so each is written (and worded) once."""

from __future__ import annotations


def positive_int(value: object, what: str) -> int:
    """`value` when it is an integer >= 1 (a bool is not one), else a ValueError naming `what`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {value!r}")
    return value
