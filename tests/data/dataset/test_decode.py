"""`burnlike.data.dataset.decode`: `decode_image` and `read_file`. Every decoder ("auto", "pil",
"torchvision") gives the pixels Pillow gives, as arrays a model can take (palette, bilevel, CMYK and
other modes converted; 16-bit kept native, 32-bit int as float32), resized bilinearly with
antialiasing. Plain 8-bit PNGs take a fast path through Pillow's C decoder, with the public route as
the fallback when Pillow's internals move. A PNG that would crash torchvision's decoder (bad CRC, too
few pixel bytes, counted exactly for every colour type, depth and Adam7 pass) is refused before
torchvision sees it, and every failure names the file and the fault."""

from __future__ import annotations

import os
import re
import struct
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from burnlike.data import DataLoaderBuilder, ImageBatcher
from burnlike.data.dataset import (
    DatasetNotFoundError,
    ImageDecodeError,
    ImageFolderDataset,
    decode_image,
)
from burnlike.data.dataset import decode as decode_module
from burnlike.data.dataset.decode import read_file
from tests.data.dataset.helpers import DECODERS
from tests.helpers.images import CORRUPT, adam7_png, pixels, write_corrupt, write_image_folder


def png_chunk(kind: bytes, body: bytes) -> bytes:
    """A PNG chunk with its length and right CRC."""
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bytes(width: int, height: int, idat: list[bytes], depth: int = 8, colour: int = 2, interlace: int = 0,
              ihdr: bool = True, iend: bool = True) -> bytes:
    """A PNG of the given IHDR fields around the given IDAT chunks (each its own chunk)."""
    data = b"\x89PNG\r\n\x1a\n"
    if ihdr:
        data += png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace))
    data += b"".join(png_chunk(b"IDAT", part) for part in idat)
    return data + (png_chunk(b"IEND", b"") if iend else b"")


def filter0_rows(array: np.ndarray) -> bytes:
    """`array` ([H, W, C] uint8) as filter-0 scanlines."""
    return b"".join(b"\0" + row.tobytes() for row in array)


def write_file(tmp_path: Path, name: str, data: bytes) -> Path:
    """`data` written to `tmp_path / name`."""
    path = tmp_path / name
    path.write_bytes(data)
    return path


def adam7_pixel_bytes(width: int, height: int, bits: int) -> int:
    """Bytes of an interlaced image's filtered scanlines, counted pass by pass, pixel by pixel."""
    total = 0
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
                           (0, 1, 1, 2)):
        cols, rows = len(range(x0, width, dx)), len(range(y0, height, dy))
        if cols and rows:
            total += rows * (1 + (cols * bits + 7) // 8)
    return total


def save_tiff(tmp_path: Path, name: str, image: Image.Image) -> Path:
    """`image` saved as a TIFF (which keeps modes a PNG cannot hold) at `tmp_path / name`."""
    path = tmp_path / name
    image.save(path, "TIFF")
    return path


# --- decoding to arrays -------------------------------------------------------------------------------------
@pytest.mark.parametrize("channels", [1, 4])
@pytest.mark.parametrize("decoder", DECODERS)
def test_grey_and_alpha_keep_their_channels_or_convert(tmp_path, channels, decoder):
    write_image_folder(tmp_path, classes=1, per_class=2, channels=channels)
    native = ImageFolderDataset.new_classification(tmp_path, decoder=decoder).get(1).image
    assert native.shape == (16, 16, channels) and np.array_equal(native.numpy(), pixels(0, 1, channels=channels))
    rgb = ImageFolderDataset.new_classification(tmp_path, decoder=decoder, mode="RGB").get(1).image
    expected = np.asarray(Image.fromarray(native.numpy()[:, :, 0] if channels == 1 else native.numpy()).convert("RGB"))
    assert rgb.shape == (16, 16, 3) and np.array_equal(rgb.numpy(), expected)


def test_palette_16_bit_and_jpeg_files_decode_like_pillow(tmp_path):
    pal = Image.fromarray(pixels(0, 0)).convert("P", palette=Image.Palette.ADAPTIVE, colors=8)
    pal.save(tmp_path / "pal.png")
    assert np.array_equal(decode_image(tmp_path / "pal.png"), np.asarray(pal.convert("RGB")))
    deep = (np.arange(16 * 16, dtype=np.uint16).reshape(16, 16) * 250)
    Image.fromarray(deep).save(tmp_path / "deep.png")
    got = decode_image(tmp_path / "deep.png")
    assert got.dtype == np.uint16 and np.array_equal(got[:, :, 0], deep)
    batch = ImageBatcher().normalise(torch.from_numpy(got[None]))
    assert torch.allclose(batch[0, 0], torch.from_numpy(deep / 65535).float(), atol=1e-6)
    Image.fromarray(pixels(0, 0)).save(tmp_path / "photo.jpg", quality=95)
    ref = np.asarray(Image.open(tmp_path / "photo.jpg"))
    assert np.array_equal(decode_image(tmp_path / "photo.jpg"), ref)
    assert np.abs(decode_image(tmp_path / "photo.jpg", "torchvision").astype(int) - ref).max() <= 2


@pytest.mark.parametrize("decoder", ["auto", "pil"])
def test_pillow_modes_become_arrays_a_model_can_take(tmp_path, decoder):
    """Palette → RGB (RGBA with transparency), bilevel → L 0/255, CMYK/YCbCr/LAB → RGB, 32-bit int
    → float32, big-endian 16-bit → native uint16."""
    rgb = pixels(0, 0, size=6)
    pal = Image.fromarray(rgb).convert("P", palette=Image.Palette.ADAPTIVE, colors=4)
    pal.save(tmp_path / "pal.png")
    got = decode_image(tmp_path / "pal.png", decoder)
    assert got.shape == (6, 6, 3) and np.array_equal(got, np.asarray(pal.convert("RGB")))
    pal.save(tmp_path / "pal_t.png", transparency=1)
    with Image.open(tmp_path / "pal_t.png") as opened:
        expected = np.asarray(opened.convert("RGBA"))
    got = decode_image(tmp_path / "pal_t.png", decoder)
    assert got.shape == (6, 6, 4) and np.array_equal(got, expected) and 0 in got[:, :, 3]

    pa = Image.fromarray(np.dstack([np.asarray(pal), np.full((6, 6), 77, np.uint8)]), "LA")
    pa = Image.merge("PA", (pal, pa.getchannel("A")))
    pa.putpalette(pal.getpalette())
    got = decode_image(save_tiff(tmp_path, "pa.tif", pa), decoder)
    assert got.shape == (6, 6, 4) and np.array_equal(got, np.asarray(pa.convert("RGBA")))

    bilevel = Image.fromarray(rgb[:, :, 0] > 40)
    got = decode_image(save_tiff(tmp_path, "one.tif", bilevel), decoder)
    assert got.dtype == np.uint8 and got.shape == (6, 6, 1)
    assert np.array_equal(got[:, :, 0], np.where(rgb[:, :, 0] > 40, 255, 0))

    for mode in ("CMYK", "YCbCr", "LAB"):
        image = Image.fromarray(rgb).convert(mode) if mode != "LAB" else Image.fromarray(
            np.dstack([rgb[:, :, 0], rgb[:, :, 1], rgb[:, :, 2]]), "LAB")
        path = save_tiff(tmp_path, f"{mode}.tif", image)
        try:
            with Image.open(path) as again:
                again.load()
        except OSError:  # some Pillow versions can't read back their own 6×6 YCbCr TIFF: a clear error then
            with pytest.raises(ImageDecodeError, match=rf"{mode}\.tif: cannot decode as an image"):
                decode_image(path, decoder)
            continue
        got = decode_image(path, decoder)
        assert got.shape == (6, 6, 3), mode
        assert np.array_equal(got, np.asarray(image.convert("RGB"))), mode

    wide = np.array([[70000, -5], [1, 2 ** 30]], dtype=np.int32)
    got = decode_image(save_tiff(tmp_path, "int.tif", Image.fromarray(wide, "I")), decoder)
    assert got.dtype == np.float32 and np.array_equal(got[:, :, 0], wide.astype(np.float32))

    deep = np.array([[1, 256], [65535, 4660]], dtype=np.uint16)
    big = Image.frombytes("I;16B", (2, 2), deep.astype(">u2").tobytes())
    got = decode_image(save_tiff(tmp_path, "big.tif", big), decoder)
    assert got.dtype == np.dtype(np.uint16) and got.dtype.isnative and np.array_equal(got[:, :, 0], deep)
    assert torch.equal(torch.from_numpy(got)[:, :, 0], torch.from_numpy(deep.astype(np.int32)).to(torch.uint16))


@pytest.mark.parametrize("decoder", ["auto", "pil", "torchvision"])
def test_decode_resizes_to_a_non_square_size(tmp_path, decoder):
    square = pixels(0, 0, size=8)
    path = write_file(tmp_path, "sq.png", b"")
    Image.fromarray(square).save(path)
    got = decode_image(path, decoder, size=(4, 8))
    assert got.shape == (4, 8, 3) and got.dtype == np.uint8
    reference = np.asarray(Image.fromarray(square).resize((8, 4), Image.Resampling.BILINEAR)).astype(int)
    assert np.abs(got.astype(int) - reference).max() <= 1


def test_torchvision_downscales_with_antialiasing_and_keeps_black_black(tmp_path):
    """A 1-pixel checkerboard shrunk 4x is mid-grey (antialiased, like Pillow), not aliased stripes;
    black stays 0 and white 255 after rounding."""
    board = (np.indices((16, 16)).sum(0) % 2 * 255).astype(np.uint8)
    image = np.dstack([board, np.zeros_like(board), np.full_like(board, 255)])
    path = tmp_path / "board.png"
    Image.fromarray(image).save(path)
    got = decode_image(path, "torchvision", size=(4, 4))
    reference = np.asarray(Image.fromarray(image).resize((4, 4), Image.Resampling.BILINEAR))
    assert got.dtype == np.uint8 and np.abs(got.astype(int) - reference).max() <= 1
    assert np.all(np.abs(got[:, :, 0].astype(int) - 128) <= 1)
    assert np.all(got[:, :, 1] == 0) and np.all(got[:, :, 2] == 255)
    same = decode_image(path, "torchvision", size=(16, 16))
    assert np.array_equal(same, image)


@pytest.mark.parametrize("decoder", ["auto", "pil"])
def test_a_palette_with_alpha_decodes_to_rgba(tmp_path, decoder):
    """A TGA's colour map can hold alpha (no tRNS chunk, no PA mode): the file's own channels are RGBA."""
    image = Image.new("P", (3, 2))
    image.putpalette([10, 20, 30, 40, 200, 150, 100, 255] * 128, "RGBA")
    image.putdata([0, 1, 0, 1, 1, 0])
    path = tmp_path / "map.tga"
    image.save(path)
    got = decode_image(path, decoder)
    assert got.shape == (2, 3, 4) and got[0, 0].tolist() == [10, 20, 30, 40] and got[0, 1].tolist() == [200, 150, 100, 255]
    grey = Image.new("P", (2, 2))
    grey.putpalette([90, 80, 70] * 256, "RGB")
    grey.save(tmp_path / "map3.tga")
    assert decode_image(tmp_path / "map3.tga", decoder).shape == (2, 2, 3)


@pytest.mark.parametrize("decoder", ["auto", "pil", "torchvision"])
def test_a_resized_16_bit_png_keeps_its_depth_with_every_decoder(tmp_path, decoder):
    """Resizing doesn't crush 16-bit greyscale to 8 bits: the values stay Pillow's, up to 65535."""
    grey = (np.arange(6 * 8, dtype=np.uint16).reshape(6, 8) * 1000 + 18000).astype(np.uint16)
    path = tmp_path / "deep.png"
    Image.fromarray(grey).save(path)
    got = decode_image(path, decoder, size=(3, 4))
    reference = np.asarray(Image.fromarray(grey).resize((4, 3), Image.Resampling.BILINEAR)).astype(int)
    assert got.shape == (3, 4, 1) and got.dtype == np.uint16
    assert np.abs(got[:, :, 0].astype(int) - reference).max() <= 1 and got.max() > 255


# --- the fast PNG path --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("colour", "channels"), [(0, 1), (2, 3), (4, 2), (6, 4)])
def test_fast_png_core_decodes_every_8_bit_colour_type_itself(tmp_path, monkeypatch, colour, channels):
    """Plain 8-bit PNGs go through Pillow's C decoder directly, never the slower public route."""
    array = np.random.default_rng(colour).integers(0, 256, (5, 7, channels), dtype=np.uint8)
    stream = zlib.compress(filter0_rows(array))
    mode = decode_module._PNG_MODES[colour]
    assert decode_module._inflate_core(mode, 7, 5, stream) == array.tobytes()
    public = Image.frombytes
    taken = []

    def spy(*args, **kwargs):
        taken.append(args)
        return public(*args, **kwargs)

    monkeypatch.setattr(Image, "frombytes", spy)
    # the IDAT split into three chunks: the reader joins them in order
    path = write_file(tmp_path, "split.png", png_bytes(7, 5, [stream[:3], stream[3:9], stream[9:]], colour=colour))
    got = decode_image(path)
    assert got.shape == (5, 7, channels) and np.array_equal(got, array) and got.flags.writeable
    assert taken == []  # the public route was not needed


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_png_fast_path_matches_pillow_and_its_fallback(tmp_path, monkeypatch, channels):
    write_image_folder(tmp_path, classes=1, per_class=3, channels=channels, size=24)
    paths = sorted(tmp_path.rglob("*.png"))
    fast = [decode_image(p) for p in paths]
    assert all(np.array_equal(f, decode_image(p, "pil")) for f, p in zip(fast, paths))

    def moved(*args):
        raise AttributeError("Pillow moved its internals")

    monkeypatch.setattr(decode_module, "_inflate_core", moved)
    assert all(np.array_equal(f, decode_image(p)) for f, p in zip(fast, paths))
    with pytest.raises(ImageDecodeError, match="not enough image data"):  # the public route's own check
        decode_image(write_corrupt(tmp_path / "cut.png", "cut_stream"))


# --- reading files and naming failures ----------------------------------------------------------------------
def test_read_file_reads_a_pipe_to_its_end(tmp_path):
    """A FIFO reports size 0: the first read gets one byte, the rest comes in 1 MiB reads."""
    payload = bytes(range(256)) * 9000  # 2.3 MB: more than one of the follow-up reads
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(payload)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        got = read_file(fifo)
    finally:
        writer.join()
    assert got == payload
    assert read_file(write_file(tmp_path, "f.bin", payload[:1000])) == payload[:1000]
    with pytest.raises(DatasetNotFoundError, match=f"image {tmp_path / 'nope.png'} not found"):
        read_file(tmp_path / "nope.png")


@pytest.mark.parametrize("kind", CORRUPT)
@pytest.mark.parametrize("decoder", DECODERS)
def test_corrupt_image_error_names_the_file_when_read(tmp_path, kind, decoder):
    write_image_folder(tmp_path, classes=2, per_class=3)
    bad = write_corrupt(tmp_path / "class1" / "0001.png", kind)
    ds = ImageFolderDataset.new_classification(tmp_path, decoder=decoder)
    assert ds.get(3) is not None  # the others read fine
    with pytest.raises(ImageDecodeError, match=f"{bad}: cannot decode as an image"):
        ds.get(4)
    loader = DataLoaderBuilder(ImageBatcher()).batch_size(6).build(ds)
    with pytest.raises(ImageDecodeError, match=str(bad)):
        next(iter(loader))


def test_png_structure_errors_name_the_file_and_the_fault(tmp_path):
    stream = zlib.compress(filter0_rows(np.zeros((2, 2, 3), np.uint8)))
    whole = png_bytes(2, 2, [stream])
    cases = {
        "no_iend.png": (png_bytes(2, 2, [stream], iend=False), r"truncated PNG \(no IEND chunk\)"),
        "cut_chunk.png": (whole[:-14], r"truncated PNG \(chunk b'IDAT' runs past the end of the file\)"),
        "no_idat.png": (png_bytes(2, 2, []), r"PNG without IHDR or IDAT chunk"),
        "no_ihdr.png": (png_bytes(2, 2, [stream], ihdr=False), r"PNG without IHDR or IDAT chunk"),
        "empty_idat.png": (png_bytes(2, 2, [b""]), r"not enough image data"),
        "short.png": (png_bytes(2, 2, [stream[:-6]]), r"not enough image data"),
        "garbage.png": (png_bytes(2, 2, [b"\x78\x9c\xff\xff\xff garbage"]), r"cannot decode image data"),
    }
    for name, (data, reason) in cases.items():
        path = write_file(tmp_path, name, data)
        with pytest.raises(ImageDecodeError, match=rf"^{re.escape(str(tmp_path / name))}: cannot decode as an image \(ValueError: {reason}\)$"):
            decode_image(path)


def test_decoder_and_mode_refusals_are_named(tmp_path):
    path = tmp_path / "a.png"
    Image.fromarray(pixels(0, 0, size=4)).save(path)
    with pytest.raises(ValueError, match=r"^decoder must be one of \('auto', 'pil', 'torchvision'\), got 'magic'$"):
        decode_image(path, "magic")
    with pytest.raises(ImageDecodeError, match=r"torchvision decodes to modes \['L', 'LA', 'RGB', 'RGBA'\], "
                                               r"not 'CMYK'"):
        decode_image(path, "torchvision", mode="CMYK")
    interlaced = write_file(tmp_path, "adam7.png", adam7_png(pixels(0, 0, size=5)))
    assert np.array_equal(decode_image(interlaced, "torchvision"), pixels(0, 0, size=5))


# --- the guard in front of torchvision ----------------------------------------------------------------------
def test_torchvision_never_sees_a_png_that_would_crash_it(tmp_path):
    """torchvision's PNG decoder segfaults on a bad CRC and on too few pixels; both come back as errors."""
    for kind, reason in (("bad_crc", r"PNG chunk b'IDAT' fails its CRC check"),
                         ("short_pixels", r"pixel data ends early \(392 of 784")):
        with pytest.raises(ImageDecodeError, match=reason):
            decode_image(write_corrupt(tmp_path / f"{kind}.png", kind), "torchvision")
    interlaced = tmp_path / "adam7.png"
    interlaced.write_bytes(adam7_png(pixels(0, 0, size=13)))
    for decoder in DECODERS:  # the check counts Adam7's passes right; "auto" hands interlaced files to Pillow
        assert np.array_equal(decode_image(interlaced, decoder), pixels(0, 0, size=13))


@pytest.mark.parametrize(("width", "height"), [(1, 1), (2, 1), (1, 3), (3, 5), (13, 7), (9, 2)])
@pytest.mark.parametrize(("depth", "colour", "channels"), [(8, 2, 3), (1, 0, 1), (4, 3, 1), (16, 6, 4), (8, 4, 2),
                                                           (2, 0, 1), (8, 5, 4)])
@pytest.mark.parametrize("interlace", [0, 1])
def test_torchvision_guard_counts_every_pixel_byte(width, height, depth, colour, channels, interlace):
    """torchvision's libpng crashes the process on too few pixel bytes, so the guard must count them
    exactly: enough passes, one byte fewer is refused naming both counts (colour type 5, not in the
    spec, is counted as the widest, 4 channels)."""
    bits = depth * channels
    if interlace:
        expected = adam7_pixel_bytes(width, height, bits)
    else:
        expected = height * (1 + (width * bits + 7) // 8)
    decode_module._png_check(png_bytes(width, height, [zlib.compress(bytes(expected))], depth, colour, interlace))
    short = png_bytes(width, height, [zlib.compress(bytes(expected - 1))], depth, colour, interlace)
    with pytest.raises(ValueError, match=rf"^PNG pixel data ends early \({expected - 1} of {expected} bytes\)$"):
        decode_module._png_check(short)
    decode_module._png_check(b"GIF89a not a PNG")  # other formats are torchvision's own to check
