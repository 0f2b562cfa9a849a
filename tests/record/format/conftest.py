"""Fixtures for the tests of `burnlike.record.format`: `memory_dir`, a fresh folder on fsspec's
in-memory filesystem, removed after the test."""

from __future__ import annotations

from typing import Any

import fsspec
import pytest

from burnlike.record.format.location import RemotePath


@pytest.fixture
def memory_dir(request) -> Any:
    """A `RemotePath` folder `memory://krec-<test name>`, empty at the start, removed at the end."""
    name = f"krec-{request.node.name}".replace("[", "-").replace("]", "")
    fs = fsspec.filesystem("memory")
    yield RemotePath(f"memory://{name}")
    if fs.exists(f"/{name}"):
        fs.rm(f"/{name}", recursive=True)
