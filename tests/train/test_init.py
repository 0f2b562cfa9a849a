"""`burnlike.train` (its `__init__`): the package's names resolve lazily to the modules defining
them, once (then cached in the module), and an unknown name is refused with Python's own message."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

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


def _type_checking_imports() -> dict[str, str]:
    """Name -> module of the `if TYPE_CHECKING:` imports in burnlike/train/__init__.py (what type
    checkers and IDEs see)."""
    tree = ast.parse(Path(burnlike.train.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    return {alias.name: node.module.removeprefix("burnlike.train.")
            for node in block.body if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names}


def test_every_name_is_listed_alike_for_python_and_for_type_checkers_and_resolves_to_its_module():
    """The lazy table, `__all__` and the type checkers' imports name the same objects: a name added
    to one and not the others fails here."""
    exports = burnlike.train._EXPORTS
    assert sorted(burnlike.train.__all__) == sorted(exports) == sorted(_type_checking_imports())
    assert _type_checking_imports() == exports
    for name, module in exports.items():
        assert getattr(burnlike.train, name) is getattr(importlib.import_module(f"burnlike.train.{module}"), name)
