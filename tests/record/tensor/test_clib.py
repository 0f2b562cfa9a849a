"""`burnlike.record.tensor.clib`: C functions of the running process found by name through
ctypes, with their argument and return types set and errno kept; None for a missing name, and for
every name where the process can't be opened (so the record code falls back instead of failing)."""

from __future__ import annotations

import ctypes
import errno
import os
import sys

import pytest

from burnlike.record.tensor import clib


def test_c_functions_are_found_by_name_with_their_types():
    """`clib.function` gives a process's C function with the argument and int return types set,
    errno kept for ctypes, and None for a name no loaded library has."""
    if sys.platform != "linux":
        pytest.skip("the process's own C symbols are looked up on Linux")
    getpid = clib.function("getpid")
    assert getpid is not None and getpid() == os.getpid() and getpid.restype is ctypes.c_int and getpid.argtypes == []
    close = clib.function("close", ctypes.c_int)
    assert close is not None and close.argtypes == [ctypes.c_int]
    ctypes.set_errno(0)  # ctypes' own copy, which an earlier call may have left at EBADF
    assert close(-1) == -1 and ctypes.get_errno() == errno.EBADF  # use_errno: the failure's errno is kept
    assert clib.function("burnlike_no_such_function") is None


def test_c_functions_are_none_where_the_process_has_no_c_handle(monkeypatch):
    """Where ctypes can't open the process itself (Windows: `CDLL(None)` is a TypeError there),
    every lookup is None and the record code falls back (no fallocate, no writeback hints, casts in
    pieces) instead of failing at import."""

    def no_handle(*args: object, **kwargs: object) -> None:
        raise TypeError("expected str, bytes or os.PathLike object, not NoneType")

    monkeypatch.setattr(ctypes, "CDLL", no_handle)
    assert clib.function("getpid") is None
