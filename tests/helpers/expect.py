"""Assertion helpers shared by the test modules."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def raises_exactly(kind: type[Exception], message: str) -> Iterator[None]:
    """The error and its whole message (a message that names the field is part of the behaviour)."""
    with pytest.raises(kind) as e:
        yield
    assert str(e.value) == message
