"""Image files to `[H, W, C]` numpy arrays, with Pillow or torchvision.io.

The default decoder (`"auto"`) reads 8-bit, non-interlaced PNGs itself: it checks every chunk's
CRC, joins the IDAT data and hands it to Pillow's zlib/unfilter decoder in one call
(`Image.frombytes(..., "zip", ...)`), which skips Pillow's per-file Python work (format sniffing,
chunk parsing, tile setup) that dominates small images. Every other file goes through
`Image.open`; `"pil"` and `"torchvision"` force one library for all files.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from burnlike.data.dataset.errors import DatasetNotFoundError, ImageDecodeError

__all__ = ["DECODERS", "decode_image", "read_file"]

DECODERS = ("auto", "pil", "torchvision")
"""The image decoders: "auto" (burnlike's own path for 8-bit PNGs, Pillow for the rest), "pil" or
"torchvision" (that library for every file)."""
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_MODES = {0: "L", 2: "RGB", 4: "LA", 6: "RGBA"}  # 8-bit colour types Pillow's zip decoder takes as is
_CHANNEL_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
_CHUNK = struct.Struct(">I4s")
_IHDR = struct.Struct(">IIBBBBB")


def read_file(path: str | os.PathLike[str]) -> bytes:
    """The whole file in one read (no buffered-reader object: this is most of the cost for small files).

    Args:
        path: The file.

    Raises:
        DatasetNotFoundError: No such file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise DatasetNotFoundError(f"image {path} not found") from None
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)  # one read; a byte more than the size shows whether that was all
        if len(data) <= size:
            return data
        parts = [data]
        while parts[-1]:  # a file that grew, or a pipe: read to the end
            parts.append(os.read(fd, 1 << 20))
        return b"".join(parts)
    finally:
        os.close(fd)


class _NotFast(Exception):
    """The PNG is valid but outside the fast path (16-bit, palette, interlaced...): use Pillow."""


def _png_chunks(data: bytes) -> tuple[tuple[int, ...], bytes]:
    """IHDR fields and the joined IDAT data of a PNG, every chunk's CRC checked."""
    pos, header, idat = 8, None, []
    while True:
        if pos + 12 > len(data):
            raise ValueError("truncated PNG (no IEND chunk)")
        length, kind = _CHUNK.unpack_from(data, pos)
        end = pos + 8 + length
        if end + 4 > len(data):
            raise ValueError(f"truncated PNG (chunk {kind!r} runs past the end of the file)")
        (crc,) = struct.unpack_from(">I", data, end)
        if zlib.crc32(data[pos + 4:end]) != crc:
            raise ValueError(f"PNG chunk {kind!r} fails its CRC check (corrupt file)")
        if kind == b"IHDR":
            header = _IHDR.unpack_from(data, pos + 8)
        elif kind == b"IDAT":
            idat.append(data[pos + 8:end])
        elif kind == b"IEND":
            break
        pos = end + 4
    if header is None or not idat:
        raise ValueError("PNG without IHDR or IDAT chunk")
    return header, b"".join(idat)


def _png_fast(data: bytes) -> np.ndarray:
    if not data.startswith(_PNG_SIGNATURE):
        raise _NotFast
    (width, height, depth, colour, _, _, interlace), idat = _png_chunks(data)
    if depth != 8 or interlace or colour not in _PNG_MODES:
        raise _NotFast
    mode = _PNG_MODES[colour]
    return np.frombuffer(_inflate(mode, width, height, idat), dtype=np.uint8).reshape(height, width, len(mode))


def _inflate(mode: str, width: int, height: int, idat: bytes) -> bytes:
    """Raw pixels from IDAT data, by Pillow's C zip decoder (zlib + PNG unfiltering)."""
    try:
        return _inflate_core(mode, width, height, idat)
    except (AttributeError, TypeError):  # a Pillow that moved these internals: the public route
        from PIL import Image

        return Image.frombytes(mode, (width, height), idat, "zip", mode).tobytes()


def _inflate_core(mode: str, width: int, height: int, idat: bytes) -> bytes:
    """The decoder called on a core image directly: half the per-file cost of the public
    `Image.frombytes(..., "zip", ...).tobytes()`, with the same checks."""
    from PIL import Image

    core, size = Image.core, width * height * len(mode)  # type: ignore[attr-defined]  # Pillow's C core (private; public fallback)
    image = core.new(mode, (width, height))
    decoder = core.zip_decoder(mode, mode)
    decoder.setimage(image, (0, 0, width, height))
    consumed, error = decoder.decode(idat)
    if consumed >= 0:  # Pillow's own checks in Image.frombytes
        raise ValueError("not enough image data")
    if error != 0:
        raise ValueError("cannot decode image data")
    encoder = core.raw_encoder(mode, mode, 0, 1)
    encoder.setimage(image, (0, 0, width, height))
    _, done, pixels = encoder.encode(size + 1)
    if done != 1 or len(pixels) != size:
        raise AttributeError("the raw encoder did not return the whole image")  # take the public route
    return bytes(pixels)


_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _png_check(data: bytes) -> None:
    """A PNG's chunks, zlib stream and pixel count are intact: torchvision's libpng build takes down
    the whole process (a segfault, not an exception) on such files, so none of them reaches it."""
    if not data.startswith(_PNG_SIGNATURE):
        return
    (width, height, depth, colour, _, _, interlace), idat = _png_chunks(data)
    bits = depth * _CHANNELS.get(colour, 4)
    passes = _ADAM7 if interlace else ((0, 0, 1, 1),)
    expected = 0
    for x0, y0, dx, dy in passes:
        w, h = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if w > 0 and h > 0:
            expected += h * (1 + -(-w * bits // 8))
    found = len(zlib.decompress(idat))
    if found < expected:
        raise ValueError(f"PNG pixel data ends early ({found} of {expected} bytes)")


def _pil(data: bytes, mode: str | None, size: tuple[int, int] | None) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        image: Image.Image = opened
        image.load()
        if mode is not None:
            image = image.convert(mode)
        elif image.mode in ("P", "PA"):
            # alpha from a tRNS chunk, a PA image, or the palette itself (a TGA's 32-bit colour map)
            alpha = "transparency" in image.info or image.mode == "PA" or getattr(image.palette, "mode", "") == "RGBA"
            image = image.convert("RGBA" if alpha else "RGB")
        elif image.mode in ("1", "CMYK", "YCbCr", "LAB", "HSV"):
            image = image.convert("L" if image.mode == "1" else "RGB")
        elif image.mode == "I":
            image = image.convert("F")
        if size is not None and image.size != (size[1], size[0]):
            image = image.resize((size[1], size[0]), Image.Resampling.BILINEAR)
        array = np.asarray(image)
    if array.dtype.byteorder == ">":  # "I;16B"
        array = array.astype(array.dtype.newbyteorder("="))
    return array[:, :, None] if array.ndim == 2 else array


_TV_MODES = {None: "UNCHANGED", "L": "GRAY", "LA": "GRAY_ALPHA", "RGB": "RGB", "RGBA": "RGB_ALPHA"}


def _torchvision(data: bytes, mode: str | None, size: tuple[int, int] | None) -> np.ndarray:
    import torch
    from torchvision.io import ImageReadMode, decode_image

    if mode not in _TV_MODES:
        raise ValueError(f"torchvision decodes to modes {sorted(m for m in _TV_MODES if m)}, not {mode!r}")
    _png_check(data)
    image = decode_image(torch.frombuffer(bytearray(data), dtype=torch.uint8),
                         mode=getattr(ImageReadMode, _TV_MODES[mode]))
    if size is not None and tuple(image.shape[1:]) != tuple(size):
        resized = torch.nn.functional.interpolate(image[None].float(), size=tuple(size), mode="bilinear",
                                                  antialias=True, align_corners=False)[0]
        depth = image.dtype  # uint8, or uint16 for a 16-bit PNG: kept, as Pillow keeps it
        image = resized.round_().clamp_(0, torch.iinfo(depth).max).to(depth)
    pixels: np.ndarray = image.permute(1, 2, 0).contiguous().numpy()
    return pixels


def decode_image(path: str | os.PathLike[str], decoder: str = "auto", mode: str | None = None,
                 size: Sequence[int] | None = None) -> np.ndarray:
    """`[H, W, C]` pixels of `path` (uint8; uint16 for 16-bit greyscale; float32 for float images).

    `mode` converts (Pillow's names: "L", "RGB", "RGBA", ...; `None` keeps the file's own channels, a
    palette expanded to RGB/RGBA); `size` is `(height, width)` to resize to. A file that doesn't
    decode raises `ImageDecodeError` naming it.

    Args:
        path: The image file.
        decoder: One of `DECODERS`.
        mode: The mode to convert to (None: the file's own channels).
        size: `(height, width)` to resize to (None: the file's size).

    Raises:
        ValueError: An unknown decoder.
        ImageDecodeError: The file doesn't decode.
        DatasetNotFoundError: No such file.
    """
    if decoder not in DECODERS:
        raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
    shape = None if size is None else (int(size[0]), int(size[1]))
    data = read_file(path)
    array = _decode(path, data, decoder, mode, shape)
    return array if array.flags.writeable else array.copy()  # torch.from_numpy wants writable memory


def _decode(path: str | os.PathLike[str], data: bytes, decoder: str, mode: str | None,
            shape: tuple[int, int] | None) -> np.ndarray:
    try:
        if decoder == "auto":
            try:
                array = _png_fast(data)
            except _NotFast:
                array = None
            if array is not None and mode in (None, _CHANNEL_MODES[array.shape[2]]) \
                    and shape in (None, array.shape[:2]):
                return array
            return _pil(data, mode, shape)
        if decoder == "torchvision":
            return _torchvision(data, mode, shape)
        return _pil(data, mode, shape)
    except ImageDecodeError:
        raise
    except Exception as e:  # Pillow, zlib and torchvision each raise their own kinds for a bad file
        raise ImageDecodeError(f"{Path(path)}: cannot decode as an image ({type(e).__name__}: {e})") from None
