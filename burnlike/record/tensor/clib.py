"""C functions already loaded in the process (libc, torch's OpenMP), found by name through ctypes:
what the OS and torch offer but Python doesn't wrap. Pure Python, nothing compiled."""

from __future__ import annotations

import ctypes
from collections.abc import Callable


def function(name: str, *argtypes: type) -> Callable[..., int] | None:
    """The process's C function `name` returning an int (errno kept for `ctypes.get_errno`), or
    None where there is none (not Linux, or a library that didn't load its symbols globally)."""
    try:
        fn = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError, TypeError):  # TypeError: Windows has no handle for the process itself
        return None
    fn.argtypes = list(argtypes)
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]
