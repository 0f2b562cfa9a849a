"""A decoding budget: how many values (and so maps and lists) a record may make a decoder build.

Why: bytes alone don't bound the work. One byte of MessagePack (`0x90`) is an empty list costing
~60 bytes of memory and microseconds of Python to build, and gzip turns 32 KB into 32M of them. A
real record holds a few dozen values per tensor (its bytes are one `bin`) plus its metadata, so
the limit is derived from the size of the file on disk (one value per `BYTES_PER_VALUE` bytes)
and, when the module being loaded is known, from its tensors: work and memory stay O(file size)
with small constants. A map or list is charged for all its entries when its header is read, so a
declared flood is refused before any of it is built.
"""

from __future__ import annotations

import os

from torch import nn

from burnlike.record.error import RecordError

BASE = 65536  # metadata, Lightning's loop/callback state, hyperparameters: far below this in practice
BYTES_PER_VALUE = 64  # real records spend more bytes than this per value (tensor bytes are one value)
PER_TENSOR = 256  # values per parameter/buffer: its record, its optimizer state, a checkpoint's copy
PER_MODULE = 16
MAX_DEPTH = 200  # nesting: real records nest < 20 levels; keeps recursion far from Python's limit


class Budget:
    """Counts the values a decoder builds (a map/list: 1 + its entries) and raises RecordError past `limit`."""

    def __init__(self, limit: int, path: str | os.PathLike[str] | None = None, why: str = "") -> None:
        self.limit, self.path, self.why, self.used = limit, path, why, 0

    @classmethod
    def for_record(cls, file_size: int, module: nn.Module | None = None,
                   path: str | os.PathLike[str] | None = None) -> Budget:
        """The limit for a record file of `file_size` bytes on disk, loaded into `module` if given."""
        limit = BASE + max(file_size, 0) // BYTES_PER_VALUE
        why = f"a {file_size:,}-byte file"
        if module is not None:
            tensors = sum(1 for _ in module.parameters()) + sum(1 for _ in module.buffers())
            by_module = BASE + PER_TENSOR * tensors + PER_MODULE * sum(1 for _ in module.modules())
            if by_module < limit:
                limit, why = by_module, f"a {type(module).__name__} of {tensors} tensors"
        return cls(limit, path, why)

    def take(self, n: int = 1) -> None:
        self.used += n
        if self.used > self.limit:
            raise RecordError(f"holds more than {self.limit:,} values (maps, lists and their entries), more "
                              f"than {self.why} can (a record holds a few dozen per tensor): refusing to decode it",
                              self.path)
