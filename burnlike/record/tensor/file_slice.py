"""`FileSlice`: a tensor's bytes left in the record file until they are read into place."""

from __future__ import annotations

import os
from typing import IO

import torch

from burnlike.record.error import RecordError
from burnlike.record.tensor.buffers import as_bytes


def _fileno(f: IO[bytes]) -> int | None:
    try:
        return f.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return None


class FileSlice:
    """A `bin` value left in the file until `readinto` puts it in place."""

    __slots__ = ("f", "offset", "nbytes")

    def __init__(self, f: IO[bytes], offset: int, nbytes: int) -> None:
        self.f, self.offset, self.nbytes = f, offset, nbytes

    def __len__(self) -> int:
        return self.nbytes

    def part(self, start: int, nbytes: int) -> FileSlice:
        """Bytes `[start, start + nbytes)` of this slice."""
        return FileSlice(self.f, self.offset + start, nbytes)

    def readinto(self, t: torch.Tensor) -> torch.Tensor:
        """Read into `t`'s memory (a contiguous CPU tensor of exactly `nbytes`). Positional reads
        (`os.preadv`) when the OS has them, so several threads can read one file at once."""
        if not self.nbytes:
            return t
        buf = as_bytes(t)
        fd = _fileno(self.f)
        if fd is None or not hasattr(os, "preadv"):
            self.f.seek(self.offset)
            got = self.f.readinto(buf)  # type: ignore[attr-defined]
        else:
            got = 0
            while got < self.nbytes:  # Linux moves at most ~2 GiB per call
                n = os.preadv(fd, [buf[got:]], self.offset + got)
                if not n:
                    break
                got += n
        if got != self.nbytes:
            raise RecordError("file changed while reading")
        return t

    @property
    def parallel(self) -> bool:
        """Whether reads of this file can run on several threads."""
        return hasattr(os, "preadv") and _fileno(self.f) is not None
