"""Fixtures shared below this folder."""

from __future__ import annotations

from typing import Any

import fsspec
import pytest

from burnlike.record.format.location import RemotePath


@pytest.fixture
def memory_dir(request) -> Any:
    name = f"krec-{request.node.name}".replace("[", "-").replace("]", "")
    fs = fsspec.filesystem("memory")
    yield RemotePath(f"memory://{name}")
    if fs.exists(f"/{name}"):
        fs.rm(f"/{name}", recursive=True)
