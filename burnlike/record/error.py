"""`RecordError`: the one exception every malformed or unreadable record raises."""

from __future__ import annotations

import os


class RecordError(ValueError):
    """A record file can't be read or written as asked. Names the file and the key path."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None, key: str | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.key = key
        where = ""
        if self.path:
            where += f"{self.path}: "
        if key:
            where += f"at '{key}': "
        super().__init__(where + message)
