"""Helpers for the tests of the examples: load `examples/<name>.py` as a module (to call its
`main(argv)` in this process) or run it as a script with --help."""

import importlib.util
import runpy
import sys

import pytest

from tests.helpers.paths import REPO


def example(name: str):
    """`examples/<name>.py` imported as a module."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", REPO / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def run_with_help(name: str, capsys, monkeypatch) -> tuple[object, str]:
    """Runs `examples/<name>.py` as `__main__` with --help (what `python examples/<name>.py --help`
    does, in this process: no start-up cost); returns its exit code and what it printed."""
    monkeypatch.setattr(sys, "argv", [f"examples/{name}.py", "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(REPO / "examples" / f"{name}.py"), run_name="__main__")
    return done.value.code, capsys.readouterr().out
