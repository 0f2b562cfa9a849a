"""Behaviours of burnlike.data that mutation testing found unpinned: the PNG reader's own checks and
counts, Pillow's mode conversions, the torchvision resize, pipes, normalisation values, CSV edge
cases, MNIST without a network, and the small datasets' selection semantics."""

from __future__ import annotations

import re
import struct
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from images import adam7_png, pixels
from PIL import Image

from burnlike.data.dataset import DatasetNotFoundError, ImageDecodeError, decode_image
from burnlike.data.dataset import decode as decode_module
from burnlike.data.dataset.decode import read_file

# --- PNG files written byte by byte -------------------------------------------------------------


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(width: int, height: int, idat: list[bytes], depth: int = 8, colour: int = 2, interlace: int = 0,
         ihdr: bool = True, iend: bool = True) -> bytes:
    """A PNG of the given IHDR fields around the given IDAT chunks (each its own chunk)."""
    data = b"\x89PNG\r\n\x1a\n"
    if ihdr:
        data += _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, interlace))
    data += b"".join(_chunk(b"IDAT", part) for part in idat)
    return data + (_chunk(b"IEND", b"") if iend else b"")


def _rows(array: np.ndarray) -> bytes:
    """`array` ([H, W, C] uint8) as filter-0 scanlines."""
    return b"".join(b"\0" + row.tobytes() for row in array)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("colour", "channels"), [(0, 1), (2, 3), (4, 2), (6, 4)])
def test_the_fast_png_core_decodes_every_8_bit_colour_type_itself(tmp_path, monkeypatch, colour, channels):
    """Plain 8-bit PNGs go through Pillow's C decoder directly, never the slower public route."""
    array = np.random.default_rng(colour).integers(0, 256, (5, 7, channels), dtype=np.uint8)
    stream = zlib.compress(_rows(array))
    mode = decode_module._PNG_MODES[colour]
    assert decode_module._inflate_core(mode, 7, 5, stream) == array.tobytes()
    public = Image.frombytes
    taken = []

    def spy(*args, **kwargs):
        taken.append(args)
        return public(*args, **kwargs)

    monkeypatch.setattr(Image, "frombytes", spy)
    # the IDAT split into three chunks: the reader joins them in order
    path = _write(tmp_path, "split.png", _png(7, 5, [stream[:3], stream[3:9], stream[9:]], colour=colour))
    got = decode_image(path)
    assert got.shape == (5, 7, channels) and np.array_equal(got, array) and got.flags.writeable
    assert taken == []  # the public route was not needed


def test_png_structure_errors_name_the_file_and_the_fault(tmp_path):
    stream = zlib.compress(_rows(np.zeros((2, 2, 3), np.uint8)))
    whole = _png(2, 2, [stream])
    cases = {
        "no_iend.png": (_png(2, 2, [stream], iend=False), r"truncated PNG \(no IEND chunk\)"),
        "cut_chunk.png": (whole[:-14], r"truncated PNG \(chunk b'IDAT' runs past the end of the file\)"),
        "no_idat.png": (_png(2, 2, []), r"PNG without IHDR or IDAT chunk"),
        "no_ihdr.png": (_png(2, 2, [stream], ihdr=False), r"PNG without IHDR or IDAT chunk"),
        "empty_idat.png": (_png(2, 2, [b""]), r"not enough image data"),
        "short.png": (_png(2, 2, [stream[:-6]]), r"not enough image data"),
        "garbage.png": (_png(2, 2, [b"\x78\x9c\xff\xff\xff garbage"]), r"cannot decode image data"),
    }
    for name, (data, reason) in cases.items():
        path = _write(tmp_path, name, data)
        with pytest.raises(ImageDecodeError, match=rf"^{re.escape(str(tmp_path / name))}: cannot decode as an image \(ValueError: {reason}\)$"):
            decode_image(path)


def _adam7_bytes(width: int, height: int, bits: int) -> int:
    """Bytes of an interlaced image's filtered scanlines, counted pass by pass, pixel by pixel."""
    total = 0
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
                           (0, 1, 1, 2)):
        cols, rows = len(range(x0, width, dx)), len(range(y0, height, dy))
        if cols and rows:
            total += rows * (1 + (cols * bits + 7) // 8)
    return total


@pytest.mark.parametrize(("width", "height"), [(1, 1), (2, 1), (1, 3), (3, 5), (13, 7), (9, 2)])
@pytest.mark.parametrize(("depth", "colour", "channels"), [(8, 2, 3), (1, 0, 1), (4, 3, 1), (16, 6, 4), (8, 4, 2),
                                                           (2, 0, 1), (8, 5, 4)])
@pytest.mark.parametrize("interlace", [0, 1])
def test_the_torchvision_guard_counts_every_pixel_byte(width, height, depth, colour, channels, interlace):
    """torchvision's libpng crashes the process on too few pixel bytes, so the guard must count them
    exactly: enough passes, one byte fewer is refused naming both counts (colour type 5, not in the
    spec, is counted as the widest, 4 channels)."""
    bits = depth * channels
    if interlace:
        expected = _adam7_bytes(width, height, bits)
    else:
        expected = height * (1 + (width * bits + 7) // 8)
    decode_module._png_check(_png(width, height, [zlib.compress(bytes(expected))], depth, colour, interlace))
    short = _png(width, height, [zlib.compress(bytes(expected - 1))], depth, colour, interlace)
    with pytest.raises(ValueError, match=rf"^PNG pixel data ends early \({expected - 1} of {expected} bytes\)$"):
        decode_module._png_check(short)
    decode_module._png_check(b"GIF89a not a PNG")  # other formats are torchvision's own to check


def test_the_torchvision_guard_checks_crcs_before_torchvision_runs():
    data = bytearray(_png(2, 2, [zlib.compress(bytes(14))]))
    data[data.index(b"IDAT") + 5] ^= 0xFF
    with pytest.raises(ValueError, match="PNG chunk b'IDAT' fails its CRC check"):
        decode_module._png_check(bytes(data))


def test_read_file_reads_a_pipe_to_its_end(tmp_path):
    """A FIFO reports size 0: the first read gets one byte, the rest comes in 1 MiB reads."""
    import os

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
    assert read_file(_write(tmp_path, "f.bin", payload[:1000])) == payload[:1000]
    with pytest.raises(DatasetNotFoundError, match=f"image {tmp_path / 'nope.png'} not found"):
        read_file(tmp_path / "nope.png")


def _tiff(tmp_path: Path, name: str, image: Image.Image) -> Path:
    path = tmp_path / name
    image.save(path, "TIFF")
    return path


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
    got = decode_image(_tiff(tmp_path, "pa.tif", pa), decoder)
    assert got.shape == (6, 6, 4) and np.array_equal(got, np.asarray(pa.convert("RGBA")))

    bilevel = Image.fromarray(rgb[:, :, 0] > 40)
    got = decode_image(_tiff(tmp_path, "one.tif", bilevel), decoder)
    assert got.dtype == np.uint8 and got.shape == (6, 6, 1)
    assert np.array_equal(got[:, :, 0], np.where(rgb[:, :, 0] > 40, 255, 0))

    for mode in ("CMYK", "YCbCr", "LAB"):
        image = Image.fromarray(rgb).convert(mode) if mode != "LAB" else Image.fromarray(
            np.dstack([rgb[:, :, 0], rgb[:, :, 1], rgb[:, :, 2]]), "LAB")
        path = _tiff(tmp_path, f"{mode}.tif", image)
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
    got = decode_image(_tiff(tmp_path, "int.tif", Image.fromarray(wide, "I")), decoder)
    assert got.dtype == np.float32 and np.array_equal(got[:, :, 0], wide.astype(np.float32))

    deep = np.array([[1, 256], [65535, 4660]], dtype=np.uint16)
    big = Image.frombytes("I;16B", (2, 2), deep.astype(">u2").tobytes())
    got = decode_image(_tiff(tmp_path, "big.tif", big), decoder)
    assert got.dtype == np.dtype(np.uint16) and got.dtype.isnative and np.array_equal(got[:, :, 0], deep)
    assert torch.equal(torch.from_numpy(got)[:, :, 0], torch.from_numpy(deep.astype(np.int32)).to(torch.uint16))


@pytest.mark.parametrize("decoder", ["auto", "pil", "torchvision"])
def test_resizing_to_a_non_square_size(tmp_path, decoder):
    square = pixels(0, 0, size=8)
    path = _write(tmp_path, "sq.png", b"")
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


def test_decoder_and_mode_refusals_are_named(tmp_path):
    path = tmp_path / "a.png"
    Image.fromarray(pixels(0, 0, size=4)).save(path)
    with pytest.raises(ValueError, match=r"^decoder must be one of \('auto', 'pil', 'torchvision'\), got 'magic'$"):
        decode_image(path, "magic")
    with pytest.raises(ImageDecodeError, match=r"torchvision decodes to modes \['L', 'LA', 'RGB', 'RGBA'\], "
                                               r"not 'CMYK'"):
        decode_image(path, "torchvision", mode="CMYK")
    interlaced = _write(tmp_path, "adam7.png", adam7_png(pixels(0, 0, size=5)))
    assert np.array_equal(decode_image(interlaced, "torchvision"), pixels(0, 0, size=5))


# --- ImageBatcher ---------------------------------------------------------------------------------


def _items(tmp_path: Path, shapes: list[tuple[int, int]], channels: int = 3) -> list:
    from burnlike.data.dataset import ImageFolderDataset

    paths = []
    for i, (h, w) in enumerate(shapes):
        array = pixels(i, i, size=max(h, w), channels=channels)[:h, :w]
        path = tmp_path / f"{i}.png"
        Image.fromarray(array[:, :, 0] if channels == 1 else array).save(path)
        paths.append((path, "c"))
    ds = ImageFolderDataset.new_classification_with_items(paths, ["c"])
    return [ds.get(i) for i in range(ds.len())]


def test_normalise_applies_mean_and_std_per_channel_at_every_depth():
    from burnlike.data import ImageBatcher

    batcher = ImageBatcher(mean=(0.5, 0.25, 0.0), std=(0.5, 0.25, 2.0))
    u8 = torch.tensor([[[[255, 0, 51]]]], dtype=torch.uint8)  # [B=1, H=1, W=1, C=3]
    out = batcher.normalise(u8)
    assert out.shape == (1, 3, 1, 1) and out.dtype == torch.float32
    assert torch.allclose(out.flatten(), torch.tensor([1.0, -1.0, 0.1]), atol=1e-6)
    u16 = torch.tensor([[[[65535, 0, 13107]]]], dtype=torch.int32).to(torch.uint16)
    assert torch.allclose(batcher.normalise(u16).flatten(), torch.tensor([1.0, -1.0, 0.1]), atol=1e-6)
    floats = torch.tensor([[[[1.0, 0.0, 0.2]]]])  # float images are already in [0, 1]
    assert torch.allclose(batcher.normalise(floats).flatten(), torch.tensor([1.0, -1.0, 0.1]), atol=1e-6)
    one = ImageBatcher(mean=(0.5,), std=(0.25,)).normalise(torch.full((2, 2, 3, 4), 255, dtype=torch.uint8))
    assert one.shape == (2, 4, 2, 3) and torch.allclose(one, torch.full_like(one, 2.0))


def test_image_batcher_refusals_name_what_is_wrong(tmp_path):
    from burnlike.data import ImageBatcher
    from burnlike.data.dataset import Annotation, Label, MultiLabel

    with pytest.raises(ValueError, match=r"^mean and std need the same number of values \(one, or one per channel\), "
                                         r"got \[0.1, 0.2\] and \[1.0\]$"):
        ImageBatcher(mean=(0.1, 0.2), std=(1.0,))
    with pytest.raises(ValueError, match=r"^std values must be > 0, got \[1.0, 0.0\]$"):
        ImageBatcher(mean=(0.1, 0.2), std=(1.0, 0.0))
    with pytest.raises(ValueError, match=r"^mean/std have 2 values but the images have 3 channels$"):
        ImageBatcher(mean=(0.1, 0.2), std=(1.0, 1.0)).normalise(torch.zeros((1, 2, 2, 3), dtype=torch.uint8))
    batcher = ImageBatcher()
    with pytest.raises(ValueError, match=r"^cannot batch zero images$"):
        batcher.batch([])
    a, b = _items(tmp_path, [(2, 5), (3, 5)])
    with pytest.raises(ValueError, match=rf"^images of different sizes in one batch: {re.escape(a.image_path)} is "
                                         rf"5x2 \(3 channels\), {re.escape(b.image_path)} is 5x3 \(3 channels\); "
                                         r"resize them to one size \(ImageFolderDataset\(\.\.\., size=\(H, W\)\), "
                                         r"data\.size=\[H,W\] in the app\)$"):
        batcher.batch([a, b])
    deep = dataclasses_replace(a, image=a.image.to(torch.int32).to(torch.uint16))
    with pytest.raises(ValueError, match=rf"^images of different depths in one batch: {re.escape(a.image_path)} is "
                                         rf"torch.uint8, {re.escape(a.image_path)} is torch.uint16$"):
        batcher.batch([a, deep])
    with pytest.raises(ValueError, match=r"^one batch mixes annotation kinds \['Label', 'MultiLabel'\]$"):
        batcher.targets([Label(0), MultiLabel([1])])
    with pytest.raises(ValueError, match=r"^multi-label targets need ImageBatcher\(num_classes=\.\.\.\)$"):
        batcher.targets([MultiLabel([1])])

    class Box(Annotation):
        pass

    with pytest.raises(ValueError, match=r"^unsupported annotation Box$"):
        batcher.targets([Box()])
    hot = ImageBatcher(num_classes=3).targets([MultiLabel([0, 2]), MultiLabel([])])
    assert hot.dtype == torch.int64 and hot.tolist() == [[1, 0, 1], [0, 0, 0]]


def dataclasses_replace(item, **changes):
    import dataclasses

    return dataclasses.replace(item, **changes)


def test_a_batch_goes_to_the_device_asked_for(tmp_path):
    from burnlike.data import ImageBatcher

    items = _items(tmp_path, [(2, 3), (2, 3)])
    here = ImageBatcher().batch(items)
    assert here.images.device.type == "cpu" and here.targets.tolist() == [0, 0]
    moved = ImageBatcher().batch(items, device="meta")
    assert moved.images.device.type == "meta" and moved.targets.device.type == "meta"
    assert moved.image_paths == [i.image_path for i in items]


# --- ImageFolderDataset ---------------------------------------------------------------------------


def test_image_folder_items_report_width_and_height_and_batch_by_shape(tmp_path):
    from burnlike.data.dataset import ImageFolderDataset, ImageItems, Label

    shapes = [(2, 5), (3, 5), (2, 5)]
    for i, (h, w) in enumerate(shapes):
        Image.fromarray(pixels(0, i, size=5)[:h, :w]).save(tmp_path / f"{i}.png")
    ds = ImageFolderDataset.new_classification_with_items([(tmp_path / f"{i}.png", "k") for i in range(3)], ["j", "k"])
    item = ds.get(1)
    assert (item.image_width, item.image_height) == (5, 3) and item.annotation == Label(1)
    mixed = ds.__getitems__([0, 1])
    assert isinstance(mixed, list)
    assert [(m.image_width, m.image_height, m.annotation) for m in mixed] == [(5, 2, Label(1)), (5, 3, Label(1))]
    same = ds.__getitems__([0, 2])
    assert isinstance(same, ImageItems) and same.images.shape == (2, 2, 5, 3)
    assert ds.__getitems__([]) == []
    with pytest.raises(IndexError, match=r"^index 3 is out of range for ImageFolderDataset of length 3$"):
        ds.__getitems__([0, 3])
    with pytest.raises(Exception, match="label 'z' is not one of the classes"):
        ImageFolderDataset.new_classification_with_items([(tmp_path / "0.png", "z")], ["j", "k"])
    grey = ImageFolderDataset.new_classification_with_items([(tmp_path / "0.png", "k")], ["k"], mode="L", size=(4, 4))
    assert grey.get(0).image.shape == (4, 4, 1)
    multi = ImageFolderDataset.new_multilabel_classification_with_items([(tmp_path / "0.png", ["k"])], ["j", "k"],
                                                                        size=(4, 4))
    assert multi.get(0).image.shape == (4, 4, 3)


def test_image_folder_options_are_checked(tmp_path):
    from burnlike.data.dataset import DatasetError, ImageFolderDataset

    Image.fromarray(pixels(0, 0, size=3)).save(tmp_path / "a.png")
    items = [(tmp_path / "a.png", "c")]
    assert ImageFolderDataset.new_classification_with_items(items, ["c"], size=(1, 1)).get(0).image.shape == (1, 1, 3)
    for size in [(5,), (0, 3), (3, 0, 1)]:
        with pytest.raises(ValueError, match=rf"^size must be \(height, width\) with both >= 1, got {re.escape(repr(size))}$"):
            ImageFolderDataset.new_classification_with_items(items, ["c"], size=size)
    with pytest.raises(DatasetError, match=r"^Invalid file extension: 'txt' \(supported: bmp, jpg, jpeg, png, gif, tif, "
                                           r"tiff, webp\)$"):
        ImageFolderDataset.new_classification_with(tmp_path, [".TXT"])
    with pytest.raises(DatasetError, match=r"^Invalid file extension: '\(none\)'"):
        ImageFolderDataset.new_classification_with_items([(tmp_path / "noext", "c")], ["c"])
    with pytest.raises(DatasetNotFoundError, match=rf"^image folder {re.escape(str(tmp_path / 'a.png'))} not found "
                                                   r"\(it is a file\)$"):
        ImageFolderDataset.new_classification(tmp_path / "a.png")
    with pytest.raises(DatasetNotFoundError, match=rf"^image folder {re.escape(str(tmp_path / 'nope'))} not found$"):
        ImageFolderDataset.new_classification(tmp_path / "nope")


def test_image_folders_follow_symlinked_class_folders(tmp_path):
    from burnlike.data.dataset import ImageFolderDataset

    elsewhere = tmp_path / "elsewhere" / "cats"
    elsewhere.mkdir(parents=True)
    Image.fromarray(pixels(0, 0, size=3)).save(elsewhere / "a.png")
    (tmp_path / "root").mkdir()
    Image.fromarray(pixels(0, 1, size=3)).save(tmp_path / "root" / "b.png")
    (tmp_path / "root" / "cats").symlink_to(elsewhere, target_is_directory=True)
    ds = ImageFolderDataset.new_classification(tmp_path / "root")
    assert ds.len() == 2 and ds.classes == ["cats", "root"]


def test_segmentation_masks_resize_and_skip_when_corrupt(tmp_path):
    from burnlike.data.dataset import ImageFolderDataset, SegmentationMask

    Image.fromarray(pixels(0, 0, size=4)).save(tmp_path / "img.png")
    mask = np.array([[0, 0, 2, 2], [0, 0, 2, 2], [1, 1, 3, 3], [1, 1, 3, 3]], dtype=np.uint8)
    Image.fromarray(np.dstack([mask, mask * 0 + 9, mask * 0 + 9])).save(tmp_path / "mask.png")
    ds = ImageFolderDataset.new_segmentation_with_items([(tmp_path / "img.png", tmp_path / "mask.png")], ["a", "b"])
    got = ds.get(0).annotation
    assert isinstance(got, SegmentationMask) and got.mask.dtype == torch.int64 and np.array_equal(got.mask, mask)
    small = ImageFolderDataset.new_segmentation_with_items([(tmp_path / "img.png", tmp_path / "mask.png")], ["a"],
                                                           size=(2, 2), decoder="pil")
    assert small.get(0).image.shape == (2, 2, 3) and small.get(0).annotation.mask.shape == (2, 2)
    (tmp_path / "bad_mask.png").write_bytes(b"not a png")
    with pytest.warns(UserWarning, match="skipped 1 of 2 images that don't decode: .*bad_mask.png: cannot decode"):
        kept = ImageFolderDataset.new_segmentation_with_items(
            [(tmp_path / "img.png", tmp_path / "mask.png"), (tmp_path / "img.png", tmp_path / "bad_mask.png")],
            ["a"], skip_corrupt=True)
    assert kept.len() == 1


@pytest.mark.parametrize("bad", [5, 6, 7])
def test_the_skip_warning_lists_five_and_counts_the_rest(tmp_path, bad):
    from burnlike.data.dataset import ImageFolderDataset

    Image.fromarray(pixels(0, 0, size=3)).save(tmp_path / "good.png")
    items = [(tmp_path / "good.png", "c")]
    for i in range(bad):
        (tmp_path / f"bad{i}.png").write_bytes(b"")
        items.append((tmp_path / f"bad{i}.png", "c"))
    with pytest.warns(UserWarning) as caught:
        ds = ImageFolderDataset.new_classification_with_items(items, ["c"], skip_corrupt=True)
    assert ds.len() == 1 and len(caught) == 1
    message = str(caught[0].message)
    shown = "; ".join(f"{tmp_path / f'bad{i}.png'}: cannot decode as an image "
                     r"\(UnidentifiedImageError: [^;]*>\)" for i in range(5))
    more = f"; and {bad - 5} more" if bad > 5 else ""
    assert re.fullmatch(rf"ImageFolderDataset: skipped {bad} of {bad + 1} images that don't decode: {shown}{more}",
                        message), message


@pytest.mark.stack
def test_the_skip_warning_points_at_the_callers_line(tmp_path):
    """Not at a line inside burnlike.data: the constructors nest at different depths. (Marked
    `stack`: left out under mutmut, whose trampolines add frames.)"""
    from burnlike.data.dataset import ImageFolderDataset

    Image.fromarray(pixels(0, 0, size=3)).save(tmp_path / "good.png")
    (tmp_path / "bad.png").write_bytes(b"")
    for make in (lambda: ImageFolderDataset.new_classification(tmp_path, skip_corrupt=True),
                 lambda: ImageFolderDataset.new_classification_with_items(
                     [(tmp_path / "good.png", "c"), (tmp_path / "bad.png", "c")], ["c"], skip_corrupt=True)):
        with pytest.warns(UserWarning, match="skipped 1 of 2") as caught:
            make()
        assert caught[0].filename == __file__, caught[0].filename
