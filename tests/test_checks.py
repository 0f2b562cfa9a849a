"""`burnlike.checks`: the one positive-integer check and its one wording."""

from __future__ import annotations

import pytest

from burnlike.checks import positive_int


def test_an_integer_from_one_up_is_returned_as_it_is():
    assert positive_int(1, "n") == 1 and positive_int(2**40, "n") == 2**40


@pytest.mark.parametrize("bad", [0, -3, 1.0, True, "2", None])
def test_anything_else_is_refused_naming_what_and_the_value(bad):
    with pytest.raises(ValueError, match=rf"^batch_size must be an integer >= 1, got {bad!r}$".replace("(", r"\(")):
        positive_int(bad, "batch_size")
