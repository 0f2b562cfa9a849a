"""`RecordError`: the one exception every malformed or unreadable record raises; `SaveError`: a
file that could not be written (the previous one at its path is unchanged).

Messages quote file content through `quote`, so a hostile file can't turn an error into megabytes
of text: at most `QUOTE_CHARS` characters of it, then how long it was.
"""

from __future__ import annotations

import os
from typing import TypeAlias

RecordPath: TypeAlias = str | os.PathLike[str] | None  # the file an error names (None: not from a file)

QUOTE_CHARS = 200  # characters of untrusted content an error message repeats
MAX_MESSAGE = 2000  # a whole message (path, key, text) longer than this is cut, as a last resort


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """`repr(value)`, cut to `limit` characters with its full length said."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


class RecordError(ValueError):
    """A record file can't be read or written as asked. Names the file and the key path.

    The message reads `<path>: at '<key>': <message>`.

    Args:
        message: What is wrong.
        path: The file, or None when the record didn't come from one.
        key: The dotted key path in the record (`linear1.weight.param`), if the problem has one.
    """

    def __init__(self, message: str, path: RecordPath = None, key: str | None = None) -> None:
        self.detail = message
        """What is wrong, without the file and key: for a caller that adds context."""
        self.path = str(path) if path is not None else None
        """The file, as a string, or None."""
        self.key = _cut(key, QUOTE_CHARS) if key else key  # key paths come from the file
        """The key path, cut to `QUOTE_CHARS` characters, or None."""
        where = ""
        if self.path:
            where += f"{self.path}: "
        if self.key:
            where += f"at '{self.key}': "
        super().__init__(_cut(where + message, MAX_MESSAGE))


class SaveError(OSError):
    """A save that could not write its file (a full or read-only disk, a missing permission): an
    OSError with the errno, naming the destination and what to do; the previous file there, if
    any, is unchanged (saves write a temp file and rename it)."""
