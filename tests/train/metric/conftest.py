"""Fixtures shared by the tests of `burnlike.train.metric`."""

import socket
import urllib.request
from pathlib import Path

import pytest


@pytest.fixture
def no_downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Network access fails the test, and TORCH_HOME is an empty folder (returned): what is built
    meanwhile must neither download nor cache anything there."""
    home = tmp_path / "torch_home"
    home.mkdir()
    monkeypatch.setenv("TORCH_HOME", str(home))

    def refuse(*args, **kwargs):
        raise AssertionError("network access")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return home
