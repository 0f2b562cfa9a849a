"""`burnlike.train` (its `__init__`): the package's names resolve lazily to the modules defining
them, once (then cached in the module), and an unknown name is refused with Python's own message."""

from __future__ import annotations

import pytest

import burnlike
import burnlike.train


def test_lazy_names_resolve_once_and_unknown_names_are_refused_by_name():
    from burnlike.train.evaluator import Evaluator

    burnlike.train.__dict__.pop("Evaluator", None)  # resolved afresh, whatever ran before
    assert burnlike.train.__getattr__("Evaluator") is Evaluator
    assert vars(burnlike.train)["Evaluator"] is Evaluator  # cached: the next lookup needs no import
    with pytest.raises(AttributeError, match=r"^module 'burnlike.train' has no attribute 'Evaluater'$"):
        burnlike.train.__getattr__("Evaluater")
    assert not hasattr(burnlike.train, "NoSuchName")
