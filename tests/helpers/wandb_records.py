"""Reading an offline W&B run as wandb wrote it (no wandb reader API for `.wandb` files is public)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def wandb_records(path: Path) -> Iterator[Any]:
    """The protobuf records (wandb's own `Record` schema) of an offline run's `.wandb` file: a 7-byte
    header, then LevelDB-log blocks of 32 KiB whose chunks carry (crc32, length, type) headers."""
    from wandb.proto import wandb_internal_pb2

    data, pos, block, pending = path.read_bytes(), 7, 32768, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk  # full/first, middle/last
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record
