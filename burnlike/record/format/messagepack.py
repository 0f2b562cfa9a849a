"""Streaming MessagePack for records: tensor bytes go between the file and the model in one pass.

Why: at 100M parameters, building the whole record in memory (`msgpack.packb`, `unpackb`) costs
two extra copies of the weights in freshly allocated (page-faulting) memory. Here the writer emits
each tensor's bytes straight to the file through reusable scratch buffers, producing exactly the
bytes `msgpack.packb(record, use_bin_type=True)` would; the reader is a bounded pull parser that
can leave big `bin` values in the file (`FileSlice`) until the model reads them into place.
"""

from __future__ import annotations

import struct
from typing import IO, Any

import msgpack
import numpy as np

from burnlike.record.error import RecordError, RecordPath
from burnlike.record.format.budget import MAX_DEPTH, Budget
from burnlike.record.format.files import rewindable
from burnlike.record.tensor.ahead import ViewsAhead, tensor_bytes_in
from burnlike.record.tensor.file_slice import FileSlice
from burnlike.record.tensor.layout import TensorBytes
from burnlike.record.tensor.tensor_data import DtypeField

BIG = 1 << 16  # bin values at least this long are streamed, not buffered


def bin_header(n: int) -> bytes:
    if n < 256:
        return b"\xc4" + bytes([n])
    if n < 1 << 16:
        return b"\xc5" + n.to_bytes(2, "big")
    if n < 1 << 32:
        return b"\xc6" + n.to_bytes(4, "big")
    raise RecordError(f"a MessagePack bin holds at most 4 GiB; this tensor has {n} bytes")


def write_msgpack(obj: Any, f: IO[bytes]) -> None:
    """Write `obj` as `msgpack.packb(obj, use_bin_type=True)` would, streaming big binaries (the
    big tensors' bytes prepared ahead on worker threads)."""
    with ViewsAhead(tensor_bytes_in(obj), rewind=rewindable(f)) as views:
        writer = _Writer(f, views)
        writer.walk(obj, 0)
        writer.flush()


class _Writer:
    """A class, not a recursive closure: that closure was a reference cycle holding the file, the
    views ahead and the last tensor until the next full garbage collection."""

    def __init__(self, f: IO[bytes], views: ViewsAhead) -> None:
        self.f, self.views = f, views
        self.packer = msgpack.Packer(use_bin_type=True)
        self.buf = bytearray()

    def flush(self) -> None:
        """Write what is buffered."""
        self.f.write(self.buf)
        self.buf.clear()

    def bin_start(self, n: int) -> None:
        """Write what is buffered and a bin header: `n` bytes of the bin follow, streamed."""
        self.buf.extend(bin_header(n))
        self.flush()

    def walk(self, o: Any, depth: int) -> None:
        buf, packer = self.buf, self.packer
        if depth > MAX_DEPTH:
            raise RecordError(f"record nests deeper than {MAX_DEPTH} levels")
        if isinstance(o, dict):
            buf.extend(packer.pack_map_header(len(o)))
            for k, v in o.items():
                buf.extend(packer.pack(k))
                self.walk(v, depth + 1)
        elif isinstance(o, (list, tuple)):
            buf.extend(packer.pack_array_header(len(o)))
            for v in o:
                self.walk(v, depth + 1)
        elif isinstance(o, TensorBytes):
            self.flush()
            self.views.write(o, self.f, self.bin_start)
        elif isinstance(o, (bytes, bytearray, memoryview)) and len(o) >= BIG:
            view = memoryview(o).cast("B")
            self.bin_start(view.nbytes)
            self.f.write(view)
        else:
            if isinstance(o, DtypeField):  # decided by now: its bytes were written first
                o = o.value()
            try:
                buf.extend(packer.pack(o))
            except (TypeError, ValueError, OverflowError) as e:
                raise RecordError(f"can't encode {type(o).__name__} ({e})") from None
        if len(buf) >= 1 << 20:
            self.flush()


_FIXED = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
          0xCA: ">f", 0xCB: ">d"}
_LEN = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}


class Reader:
    """Bounded MessagePack pull parser: every declared length is checked against the bytes left."""

    def __init__(self, f: IO[bytes], size: int, path: RecordPath, lazy: bool, budget: Budget) -> None:
        self.f, self.size, self.path, self.lazy, self.budget = f, size, path, lazy, budget
        self.key = ""

    def fail(self, message: str) -> RecordError:
        return RecordError(f"not valid MessagePack: {message} (byte {self.f.tell()})", self.path, self.key or None)

    def left(self) -> int:
        return self.size - self.f.tell()

    def read(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise self.fail(f"truncated: needs {n} bytes, {len(data)} left")
        return data

    def length(self, n: int, unit: int = 1) -> int:
        if n * unit > self.left():
            raise self.fail(f"declares {n} entries but only {self.left()} bytes are left")
        return n

    def document(self) -> Any:
        value = self.value(0, "")
        if self.left():
            raise self.fail(f"{self.left()} bytes of extra data after the record")
        return value

    def value(self, depth: int, key: str) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        self.key = key
        b = self.read(1)[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 256
        if 0x80 <= b <= 0x8F:
            return self.map(b & 0x0F, depth, key)
        if 0x90 <= b <= 0x9F:
            return self.array(b & 0x0F, depth, key)
        if 0xA0 <= b <= 0xBF:
            return self.text(b & 0x1F)
        if b == 0xC0:
            return None
        if b in (0xC2, 0xC3):
            return b == 0xC3
        if b in _FIXED:
            fmt = _FIXED[b]
            return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]
        if b in _LEN:
            n = int.from_bytes(self.read(_LEN[b]), "big")
            if b <= 0xC6:
                return self.binary(n)
            if b <= 0xDB:
                return self.text(n)
            if b <= 0xDD:
                return self.array(n, depth, key)
            return self.map(n, depth, key)
        raise self.fail(f"unsupported type byte 0x{b:02x} (ext types and 0xc1 are not record values)")

    def text(self, n: int) -> str:
        try:
            return self.read(self.length(n)).decode()
        except UnicodeDecodeError:
            raise self.fail("string is not UTF-8") from None

    def binary(self, n: int) -> Any:
        self.length(n)
        if n < BIG:
            return self.read(n)
        if self.lazy:
            out = FileSlice(self.f, self.f.tell(), n)
            self.f.seek(n, 1)
            return out
        # writable, so tensors view it without another copy; uninitialised, as the read fills it
        # (a bytearray's zero fill costs as much again as reading a large tensor)
        buf = np.empty(n, dtype=np.uint8).data
        if self.f.readinto(buf) != n:  # type: ignore[attr-defined]
            raise self.fail("truncated bin")
        return buf

    def array(self, n: int, depth: int, key: str) -> list[Any]:
        self.budget.take(1 + self.length(n))
        return [self.value(depth + 1, f"{key}[{i}]") for i in range(self.length(n))]

    def map(self, n: int, depth: int, key: str) -> dict[Any, Any]:
        self.budget.take(1 + 2 * self.length(n, 2))
        out: dict[Any, Any] = {}
        for _ in range(self.length(n, 2)):
            k = self.value(depth + 1, key)
            if not isinstance(k, (str, int, float, bytes)) or k is None:
                raise self.fail(f"map key of type {type(k).__name__}")
            out[k] = self.value(depth + 1, f"{key}.{k!s}" if key else str(k))
        return out


def read_msgpack(f: IO[bytes], size: int, path: RecordPath, lazy: bool = False, budget: Budget | None = None) -> Any:
    """Parse one MessagePack document from `f` (all of it). `lazy` leaves big bins in the file;
    `budget` (default: from `size`) bounds the maps and lists it may build."""
    return Reader(f, size, path, lazy, budget or Budget.for_record(size, None, path)).document()
