"""`burnlike.data.dataset.vision`: `ImageFolderDataset`, Burn's image folder. Classes are the
image's own folder at any depth, sorted, with items in Rust's path order (symlinked class folders
followed; another split's classes keep their ids); items hold the file's pixels, width and height
for each decoder, and the batched fetch stacks same-size images (a list otherwise) to batch like
item by item. Multi-label and segmentation items carry their targets, COCO detection items Burn's
boxes (errors naming the file, entry and key); corrupt images fail naming
the file, or are skipped with one warning that names them at the caller's line. Ends with 1,000
PNGs through a one-epoch Learner run that learns."""

from __future__ import annotations

import json
import re
import shutil
import warnings

import numpy as np
import pytest
import torch
from PIL import Image

import burnlike
from burnlike.data import DataLoaderBuilder, ImageBatch, ImageBatcher
from burnlike.data.dataset import (
    Annotation,
    BoundingBox,
    BoundingBoxes,
    DatasetError,
    DatasetNotFoundError,
    EmptySplitError,
    ImageFolderDataset,
    ImageItems,
    Label,
    MultiLabel,
    PartialDataset,
    SegmentationMask,
    ShuffledDataset,
)
from burnlike.module import Module
from burnlike.optim import AdamConfig
from burnlike.train import ClassificationOutput, LearnerBuilder, TrainOutput, TrainStep, ValidStep, backward
from burnlike.train.logger import read_metric_log
from burnlike.train.metric import AccuracyMetric, LossMetric
from tests.data.dataset.helpers import DECODERS
from tests.helpers.expect import raises_exactly
from tests.helpers.images import pixels, write_corrupt, write_image_folder


class TinyImageModel(Module, TrainStep[ImageBatch, ClassificationOutput], ValidStep[ImageBatch, ClassificationOutput]):
    """Small enough that the data, not the model, is what a one-epoch test exercises."""

    def __init__(self, classes: int) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.linear = torch.nn.Linear(8 * 4 * 4, classes)

    def step(self, batch: ImageBatch) -> ClassificationOutput:
        x = torch.nn.functional.adaptive_max_pool2d(torch.relu(self.conv(batch.images)), 4).flatten(1)
        output = self.linear(x)
        return ClassificationOutput(torch.nn.functional.cross_entropy(output, batch.targets), output, batch.targets)

    def train_step(self, batch: ImageBatch) -> TrainOutput[ClassificationOutput]:
        item = self.step(batch)
        return TrainOutput(self, backward(item.loss), item)

    def valid_step(self, batch: ImageBatch) -> ClassificationOutput:
        return self.step(batch)


# --- classes and items --------------------------------------------------------------------------------------
def test_classes_are_folders_sorted_and_items_sorted_by_path(tmp_path):
    for folder, name in (("a-b", "1.png"), ("a", "z.PNG"), ("a", "y.jpg"), ("a/deeper", "x.bmp"), ("b", "0.png")):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels(0, 0)).save(tmp_path / folder / name, format={"bmp": "BMP", "jpg": "JPEG"}.get(
            name.rsplit(".", 1)[1].lower(), "PNG"))
    (tmp_path / "a" / "notes.txt").write_text("not an image")
    ds = ImageFolderDataset.new_classification(tmp_path)
    # component-wise path order (Rust's Path ordering): "a/..." before "a-b/...", though "/" > "-" as text
    names = [item.image_path[len(str(tmp_path)) + 1:] for item in ds.iter()]
    assert names == ["a/deeper/x.bmp", "a/y.jpg", "a/z.PNG", "a-b/1.png", "b/0.png"]
    assert ds.classes == ["a", "a-b", "b", "deeper"]  # the label is the image's own folder, at any depth
    assert [item.annotation for item in ds.iter()] == [Label(3), Label(0), Label(0), Label(1), Label(2)]
    assert Annotation.Label(3) == Label(3) and isinstance(Label(0), Annotation)
    only_png = ImageFolderDataset.new_classification_with(tmp_path, ["png"])
    assert only_png.len() == 3 and only_png.classes == ["a", "a-b", "b"]
    with pytest.raises(DatasetError, match="Invalid file extension: 'txt'"):
        ImageFolderDataset.new_classification_with(tmp_path, ["txt"])


def test_image_folders_follow_symlinked_class_folders(tmp_path):
    elsewhere = tmp_path / "elsewhere" / "cats"
    elsewhere.mkdir(parents=True)
    Image.fromarray(pixels(0, 0, size=3)).save(elsewhere / "a.png")
    (tmp_path / "root").mkdir()
    Image.fromarray(pixels(0, 1, size=3)).save(tmp_path / "root" / "b.png")
    (tmp_path / "root" / "cats").symlink_to(elsewhere, target_is_directory=True)
    ds = ImageFolderDataset.new_classification(tmp_path / "root")
    assert ds.len() == 2 and ds.classes == ["cats", "root"]


def test_split_numbered_by_another_splits_classes_keeps_their_ids(tmp_path):
    write_image_folder(tmp_path / "valid", classes=3, per_class=1)
    shutil.rmtree(tmp_path / "valid" / "class0")
    classes = ["class0", "class1", "class2"]
    valid = ImageFolderDataset.new_classification(tmp_path / "valid", classes=classes)
    assert [item.annotation for item in valid.iter()] == [Label(1), Label(2)] and valid.classes == classes
    assert ImageFolderDataset.new_classification(tmp_path / "valid").classes == ["class1", "class2"]  # Burn's: ids shift
    write_image_folder(tmp_path / "valid" / "extra", classes=1, per_class=1)
    with pytest.raises(DatasetError, match=r"0000.png: label 'class0' is not one of the classes \['class1'"):
        ImageFolderDataset.new_classification(tmp_path / "valid", classes=["class1", "class2"])


@pytest.mark.parametrize("decoder", DECODERS)
def test_items_hold_the_files_pixels(image_tree, decoder):
    ds = ImageFolderDataset.new_classification(image_tree, decoder=decoder)
    assert ds.len() == 15 and ds.num_classes() == 3
    item = ds.get(7)  # class1/0002.png
    assert item.image_path.endswith("class1/0002.png") and item.annotation == Label(1)
    assert item.image.dtype == torch.uint8 and item.image.shape == (16, 16, 3)
    assert (item.image_width, item.image_height) == (16, 16)
    assert np.array_equal(item.image.numpy(), pixels(1, 2))
    assert ds.get(15) is None


def test_image_folder_items_report_width_and_height_and_batch_by_shape(tmp_path):
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


# --- the batched fetch and image sizes ----------------------------------------------------------------------
def test_image_folder_batched_fetch_equals_per_item_fetch(image_tree):
    ds = ImageFolderDataset.new_classification(image_tree)
    idx = [14, 0, 7, 7]
    fast = ds.__getitems__(idx)
    assert isinstance(fast, ImageItems) and fast.images.shape == (4, 16, 16, 3) and fast.images.dtype == torch.uint8
    batcher = ImageBatcher(mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.5))
    a, b = batcher.batch(fast), batcher.batch([ds[i] for i in idx])
    assert torch.equal(a.images, b.images) and torch.equal(a.targets, b.targets) and a.image_paths == b.image_paths
    raw = torch.stack([torch.from_numpy(pixels(i // 5, i % 5)) for i in idx]).double().permute(0, 3, 1, 2) / 255
    expected = (raw - torch.tensor([0.5, 0.4, 0.3]).view(1, 3, 1, 1).double()) / torch.tensor([0.2, 0.25, 0.5]
                                                                                                ).view(1, 3, 1, 1)
    assert a.images.shape == (4, 3, 16, 16) and a.images.dtype == torch.float32
    assert torch.allclose(a.images.double(), expected, atol=1e-5) and a.targets.tolist() == [2, 0, 1, 1]
    with pytest.raises(IndexError):
        ds.__getitems__([15])


def test_mixed_sizes_come_back_as_a_list_and_fail_to_batch_unless_resized(tmp_path):
    write_image_folder(tmp_path, classes=1, per_class=2, size=16)
    Image.fromarray(pixels(0, 9, size=12)).save(tmp_path / "class0" / "small.png")
    ds = ImageFolderDataset.new_classification(tmp_path)
    mixed = ds.__getitems__([0, 2])
    assert isinstance(mixed, list)  # can't stack: the items as they are
    with pytest.raises(ValueError, match=r"different sizes in one batch: .*0000.png is 16x16.*small.png is 12x12"
                                         r".*size=\(H, W\)"):
        ImageBatcher().batch(mixed)
    resized = ImageFolderDataset.new_classification(tmp_path, size=(8, 10))
    assert resized.__getitems__([0, 2]).images.shape == (2, 8, 10, 3)
    expected = np.asarray(Image.fromarray(pixels(0, 9, size=12)).resize((10, 8), Image.Resampling.BILINEAR))
    assert np.array_equal(resized.get(2).image.numpy(), expected)
    assert ImageFolderDataset.new_classification(tmp_path, size=(8, 10), decoder="torchvision").get(2).image.shape\
        == (8, 10, 3)


# --- multi-label and segmentation ---------------------------------------------------------------------------
def test_multilabel_and_segmentation_items_and_their_batch_targets(tmp_path):
    write_image_folder(tmp_path, classes=1, per_class=2)
    images = sorted(str(p) for p in (tmp_path / "class0").glob("*.png"))
    multi = ImageFolderDataset.new_multilabel_classification_with_items(
        [(images[0], ["sky", "sea"]), (images[1], ["tree"])], ["sea", "sky", "tree"])
    assert multi.get(0).annotation == MultiLabel([1, 0]) and multi.get(1).annotation == MultiLabel([2])
    hot = ImageBatcher(num_classes=3).batch(multi.__getitems__([0, 1])).targets
    assert hot.tolist() == [[1, 1, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match="num_classes"):
        ImageBatcher().batch(multi.__getitems__([0]))
    masks = []
    for i in range(2):
        mask = (np.arange(256).reshape(16, 16) % 3 + i).astype(np.uint8)
        Image.fromarray(np.stack([mask] * 3, axis=2)).save(tmp_path / f"mask{i}.png")  # RGB mask: first channel
        masks.append(mask)
    seg = ImageFolderDataset.new_segmentation_with_items(
        [(images[0], tmp_path / "mask0.png"), (images[1], tmp_path / "mask1.png")], ["bg", "a", "b", "c"])
    item = seg.get(1)
    assert isinstance(item.annotation, SegmentationMask) and item.annotation.mask.dtype == torch.int64
    assert np.array_equal(item.annotation.mask.numpy(), masks[1])
    batch = ImageBatcher().batch(seg.__getitems__([0, 1]))
    assert batch.targets.shape == (2, 16, 16) and np.array_equal(batch.targets[0].numpy(), masks[0])
    with pytest.raises(DatasetError, match="label 'cloud' is not one of the classes"):
        ImageFolderDataset.new_multilabel_classification_with_items([(images[0], ["cloud"])], ["sea"])
    with pytest.raises(DatasetError, match="Invalid file extension"):
        ImageFolderDataset.new_classification_with_items([(tmp_path / "x.txt", "sea")], ["sea"])


def test_segmentation_masks_resize_and_skip_when_corrupt(tmp_path):
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


# --- corrupt images skipped ---------------------------------------------------------------------------------
def test_skip_corrupt_leaves_out_bad_images_with_one_warning(tmp_path):
    write_image_folder(tmp_path, classes=2, per_class=3)
    bad = [write_corrupt(tmp_path / "class1" / "0001.png", "truncated"), write_corrupt(tmp_path / "class0" / "x.png",
                                                                                       "bad_crc")]
    with pytest.warns(UserWarning, match="skipped 2 of 7 images that don't decode") as caught:
        ds = ImageFolderDataset.new_classification(tmp_path, skip_corrupt=True)
    assert all(str(b) in str(caught[0].message) for b in bad)
    assert ds.len() == 5 and ds.classes == ["class0", "class1"]
    assert all(not item.image_path.endswith(("0001.png", "x.png")) or "class0" in item.image_path
               for item in ds.iter())
    assert sum(1 for _ in DataLoaderBuilder(ImageBatcher()).batch_size(2).build(ds)) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ImageFolderDataset.new_classification(tmp_path / "class0").len() == 4  # nothing read up front
    for p in (tmp_path / "class0").glob("*.png"):
        write_corrupt(p, "empty")
    with pytest.raises(EmptySplitError, match="none of the 4 images decode"), pytest.warns(UserWarning):
        ImageFolderDataset.new_classification(tmp_path / "class0", skip_corrupt=True)


@pytest.mark.parametrize("bad", [5, 6, 7])
def test_skip_warning_lists_five_files_and_counts_the_rest(tmp_path, bad):
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
def test_skip_warning_points_at_the_callers_line(tmp_path):
    """Not at a line inside burnlike.data, though the constructors nest at different depths. (Marked
    `stack`: it checks which frame a warning names.)"""
    Image.fromarray(pixels(0, 0, size=3)).save(tmp_path / "good.png")
    (tmp_path / "bad.png").write_bytes(b"")
    for make in (lambda: ImageFolderDataset.new_classification(tmp_path, skip_corrupt=True),
                 lambda: ImageFolderDataset.new_classification_with_items(
                     [(tmp_path / "good.png", "c"), (tmp_path / "bad.png", "c")], ["c"], skip_corrupt=True)):
        with pytest.warns(UserWarning, match="skipped 1 of 2") as caught:
            make()
        assert caught[0].filename == __file__, caught[0].filename


# --- refusals -----------------------------------------------------------------------------------------------
def test_missing_and_empty_folders_and_a_bad_decoder_are_named(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="image folder .*nowhere not found"):
        ImageFolderDataset.new_classification(tmp_path / "nowhere")
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "readme.txt").write_text("no images here")
    with pytest.raises(EmptySplitError, match=r"no image files \(\*\.bmp, \*\.jpg, \*\.jpeg, \*\.png\) under"):
        ImageFolderDataset.new_classification(tmp_path)
    with pytest.raises(DatasetNotFoundError, match="image .*gone.png not found"):
        ImageFolderDataset.new_classification_with_items([(tmp_path / "gone.png", "cats")], ["cats"]).get(0)
    write_image_folder(tmp_path, classes=1, per_class=1)
    with pytest.raises(ValueError, match="decoder must be one of"):
        ImageFolderDataset.new_classification(tmp_path, decoder="magic")


def test_image_folder_size_extension_and_folder_refusals_are_named(tmp_path):
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


# --- a training run -----------------------------------------------------------------------------------------
def test_a_thousand_pngs_feed_a_one_epoch_learner_run_that_learns(tmp_path):
    """Acceptance: 1,000 generated PNGs through ImageFolderDataset + ImageBatcher into a Learner epoch."""
    root = write_image_folder(tmp_path / "images", classes=4, per_class=250, size=16)
    train = ImageFolderDataset.new_classification(root)
    assert train.len() == 1000
    seen: list[str] = []

    class Counting(ImageBatcher):
        def batch(self, items, device=None):
            batch = super().batch(items, device)
            seen.extend(batch.image_paths)
            return batch

    burnlike.seed(0)
    learner = (LearnerBuilder(tmp_path / "run").metric_train_numeric(AccuracyMetric()).metric_train_numeric(LossMetric())
               .metric_valid_numeric(AccuracyMetric()).devices(["cpu"]).num_epochs(1).progress_bar(False)
               .build(TinyImageModel(4), AdamConfig().init(), 1e-2))
    loader = DataLoaderBuilder(Counting((0.5,), (0.5,))).batch_size(50).shuffle(0).build(train)
    valid = PartialDataset(ShuffledDataset(train, 1), 0, 100)
    learner.fit(loader, DataLoaderBuilder(ImageBatcher((0.5,), (0.5,))).batch_size(100).build(valid))
    assert sorted(seen) == sorted(item.path for item in train.items)  # every image once
    lines = (tmp_path / "run" / "train" / "epoch-1" / "Loss.log").read_text().split()
    losses = [float(line.split(",")[0]) for line in lines]
    assert len(losses) == 20 and np.mean(losses[-5:]) < np.mean(losses[:5])  # it learns from what it reads
    assert read_metric_log(tmp_path / "run" / "valid" / "epoch-1" / "Accuracy.log") > 25.0  # above chance


def test_a_batcher_that_iterates_gets_the_items_from_the_batched_fetch(image_tree):
    """Burn's `Batcher::batch(items: Vec<I>, device)` (burn-core/src/data/dataloader/batcher.rs, v0.21.0)
    gets the items: a user's batcher over `ImageFolderDataset` iterates, indexes and counts them,
    while the batched fetch stays underneath (burnlike's `ImageBatcher` still takes its fast path)."""
    ds = ImageFolderDataset.new_classification(image_tree)

    class MyBatcher:
        def batch(self, items, device):
            assert len(items) == 4 and items[0].image_path == items[:1][0].image_path
            images = torch.stack([item.image for item in items]).to(device)
            labels = torch.tensor([item.annotation.label for item in items], device=device)
            return images, labels

    images, labels = next(iter(DataLoaderBuilder(MyBatcher()).batch_size(4).build(ds)))
    assert images.shape == (4, 16, 16, 3) and labels.tolist() == [ds[i].annotation.label for i in range(4)]
    fast = ds.__getitems__([3, 9])
    assert isinstance(fast, ImageItems) and [i.image_path for i in fast] == [ds[3].image_path, ds[9].image_path]
    assert torch.equal(fast[1].image, ds[9].image) and fast[-1].annotation == ds[9].annotation
    assert (fast[0].image_width, fast[0].image_height) == (16, 16) and list(fast)[0].image_path == ds[3].image_path
    with pytest.raises(IndexError, match="out of range for a batch of 2 items"):
        fast[2]


# --- COCO detection -----------------------------------------------------------------------------------------
# Burn's tests/data/dataset_coco.json (v0.21.0): three 32x32 images, two categories, six boxes.
COCO_BOXES = {
    "two_dots_and_triangle.jpg": [(0, [3.1251719394773056, 18.0907840440165, 10.96011004126548, 10.740027510316379]),
                                  (0, [3.2572214580467658, 3.0371389270976605, 10.563961485557085, 10.828060522696012]),
                                  (1, [15.097661623108666, 3.3892709766162312, 12.632737276478679, 11.18019257221458])],
    "dot_triangle.jpg": [(0, [3.125171939477304, 17.914718019257222, 10.82806052269601, 11.004126547455297]),
                         (1, [15.27372764786794, 3.301237964236589, 12.192572214580478, 11.708390646492433])],
    "one_dot.jpg": [(0, [10.07977991746905, 9.59559834938102, 10.960110041265464, 11.356258596973863])],
}


def write_coco(root, boxes=COCO_BOXES, categories=((0, "dot"), (1, "triangle")), **changes):
    """Burn's COCO file and its images (JPEGs, as Burn's); `changes` replace top-level keys."""
    images, annotations = [], []
    for image_id, (name, objects) in enumerate(boxes.items()):
        Image.fromarray(np.full((32, 32, 3), 40 * image_id, np.uint8)).save(root / name)
        images.append({"width": 32, "height": 32, "id": image_id, "file_name": name})
        for label, bbox in objects:
            annotations.append({"id": len(annotations), "image_id": image_id, "category_id": label,
                                "segmentation": [], "bbox": bbox, "ignore": 0, "iscrowd": 0})
    data = {"images": images, "categories": [{"id": i, "name": n} for i, n in categories],
            "annotations": annotations, "info": {"year": 2024}} | changes
    path = root / "coco.json"
    path.write_text(json.dumps(data))
    return path


def test_coco_detection_items_carry_burns_boxes(tmp_path):
    ds = ImageFolderDataset.new_coco_detection(write_coco(tmp_path), tmp_path)
    assert (ds.len(), ds.get(3), ds.classes, ds.num_classes()) == (3, None, ["dot", "triangle"], 2)
    for item, (name, objects) in zip(ds.iter(), COCO_BOXES.items()):
        assert item.image_path == str(tmp_path / name) and item.image.shape == (32, 32, 3)
        assert isinstance(item.annotation, BoundingBoxes) and type(item.annotation) is Annotation.BoundingBoxes
        assert item.annotation.boxes == [BoundingBox(tuple(bbox), label) for label, bbox in objects]
    assert ds[2].annotation.boxes[0].coords == pytest.approx((10.07978, 9.595598, 10.96011, 11.356258))  # Burn's f32s
    fetched = ds.__getitems__([0, 2])
    assert isinstance(fetched, ImageItems) and [len(a.boxes) for a in fetched.annotations] == [3, 1]
    images, labels = next(iter(DataLoaderBuilder(BoxBatcher()).batch_size(3).build(ds)))
    assert images.shape == (3, 32, 32, 3) and labels == [[0, 0, 1], [0, 1], [0]]


class BoxBatcher:
    def batch(self, items, device=None):
        return torch.stack([i.image for i in items]), [[b.label for b in i.annotation.boxes] for i in items]


def test_coco_ids_images_without_boxes_and_sparse_categories(tmp_path):
    boxes = {"a.jpg": [(3, [1, 2, 3, 4])], "b.jpg": []}
    ds = ImageFolderDataset.new_coco_detection(write_coco(tmp_path, boxes, ((3, "cat"), (1, "dog"))), tmp_path)
    assert ds.classes == ["", "dog", "", "cat"]
    assert ds[0].annotation == BoundingBoxes([BoundingBox((1.0, 2.0, 3.0, 4.0), 3)])
    assert ds[1].annotation == BoundingBoxes([])


def test_coco_errors_name_the_file_the_entry_and_the_key(tmp_path):
    path = write_coco(tmp_path)
    data = json.loads(path.read_text())

    def fails(kind, message, **changes):
        broken = tmp_path / "broken.json"
        broken.write_text(json.dumps(data | changes))
        with raises_exactly(kind, message.format(broken)):
            ImageFolderDataset.new_coco_detection(broken, tmp_path)

    fails(DatasetError, "{}: no categories found (the key 'categories' is empty; expected a non-empty list)",
          categories=[])
    fails(DatasetError, "{}: no annotations found (the key 'annotations' is missing; expected a non-empty list)",
          annotations=None)
    fails(DatasetError, "{}: no images found (the key 'images' is a dict; expected a non-empty list)",
          images={"0": "a.jpg"})
    fails(DatasetError, "{}: categories[1]: 'name' is '', expected a non-empty string",
          categories=[{"id": 0, "name": "dot"}, {"id": 1, "name": ""}])
    bad_box = [dict(data["annotations"][0]), dict(data["annotations"][1], bbox=[1, 2, 3])]
    fails(DatasetError, "{}: annotations[1]: 'bbox' is [1, 2, 3], expected 4 numbers [x_min, y_min, width, height]",
          annotations=bad_box)
    fails(DatasetError, "{}: annotations[0]: 'category_id' is 2, which no category has (the largest category id is 1)",
          annotations=[dict(data["annotations"][0], category_id=2)])  # the first id past the last category
    fails(DatasetError, "{}: annotations[1]: 'category_id' is 'dot', expected an integer >= 0",
          annotations=[data["annotations"][0], dict(data["annotations"][1], category_id="dot")])
    fails(DatasetError, "{}: annotations[0]: 'image_id' is missing, expected an integer >= 0",
          annotations=[{"category_id": 0, "bbox": [1, 2, 3, 4]}])
    missing = str(tmp_path / "gone.jpg")
    fails(DatasetNotFoundError, "{}: images[1]: image " + missing + " not found",
          images=[data["images"][0], {"id": 1, "file_name": "gone.jpg"}])
    with raises_exactly(DatasetNotFoundError, f"COCO annotations file {tmp_path / 'none.json'} not found"):
        ImageFolderDataset.new_coco_detection(tmp_path / "none.json", tmp_path)
    with raises_exactly(DatasetNotFoundError, f"COCO annotations file {tmp_path} not found (it is a folder)"):
        ImageFolderDataset.new_coco_detection(tmp_path, tmp_path)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(DatasetError, match=r"bad.json: not a valid JSON file \(Expecting property name"):
        ImageFolderDataset.new_coco_detection(tmp_path / "bad.json", tmp_path)
    with raises_exactly(ValueError, "new_coco_detection takes no size: the boxes are in the image files' own pixels"):
        ImageFolderDataset.new_coco_detection(path, tmp_path, size=(16, 16))
