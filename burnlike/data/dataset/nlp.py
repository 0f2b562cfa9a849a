"""Text classification datasets: Burn's `TextFolderDataset` (a folder per class of `.txt` files),
Burn's `AgNewsDataset` (AG News from its CSV files) and a CSV reader (a text column and a label
column)."""

from __future__ import annotations

import codecs
import csv
import dataclasses
import os
from collections.abc import Sequence

from burnlike.data.dataset.base import Dataset
from burnlike.data.dataset.decode import read_file
from burnlike.data.dataset.errors import (
    DatasetError,
    DatasetNotFoundError,
    EmptySplitError,
    MissingColumnError,
)
from burnlike.data.dataset.in_memory import InMemDataset, open_text, source_roots
from burnlike.data.dataset.rows import encode_labels
from burnlike.data.dataset.vision import scan_folder

__all__ = ["AgNewsDataset", "AgNewsItem", "TextClassificationItem", "TextCsvDataset", "TextData",
           "TextDatasetItem", "TextFolderDataset", "decode_text"]


@dataclasses.dataclass
class TextData:
    """Burn's `TextData`: a file's text and where it was read from."""

    text: str  # the decoded text
    text_path: str  # the file


@dataclasses.dataclass
class TextDatasetItem:
    """Burn's item: the text (with its file) and the class id."""

    text: TextData  # the text and its file
    label: int  # the class id


@dataclasses.dataclass
class TextClassificationItem:
    """What the text batcher takes (Burn's text-classification example item)."""

    text: str  # the text
    label: int  # the class id


def decode_text(data: bytes) -> str:
    """Burn's detection order: UTF-8 with BOM, UTF-8, UTF-16 with a BOM, GB18030, then lossy UTF-8.

    Args:
        data: A text file's bytes.
    """
    if data.startswith(codecs.BOM_UTF8):
        try:
            return data[3:].decode("utf-8")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    for bom, encoding in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            try:
                return data[2:].decode(encoding)
            except UnicodeDecodeError:
                pass
    try:
        return data.decode("gb18030")  # a superset of GBK, which Burn tries next
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


class TextFolderDataset(Dataset[TextDatasetItem]):
    """`new_classification(root)`: every `.txt` under `root`, labelled by its folder (classes sorted).

    Args:
        items: `(path, class name)` pairs.
        classes: The class names; a label's id is its index here.

    Attributes:
        classes: The class names.
        items: `(path, class id)` pairs.

    Raises:
        DatasetError: A label not among `classes`.
    """

    def __init__(self, items: Sequence[tuple[str, str]], classes: Sequence[str]) -> None:
        self.classes = list(classes)
        ids = {name: i for i, name in enumerate(self.classes)}
        for path, label in items:
            if label not in ids:
                raise DatasetError(f"{path}: label {label!r} is not one of the classes {self.classes}")
        self.items = [(path, ids[label]) for path, label in items]

    @classmethod
    def new_classification(cls, root: str | os.PathLike[str]) -> TextFolderDataset:
        """Every `.txt` under `root`, labelled by its folder.

        Args:
            root: The folder of class folders.
        """
        return cls.new_classification_with(root, ("txt",))

    @classmethod
    def new_classification_with(cls, root: str | os.PathLike[str], extensions: Sequence[str]) -> TextFolderDataset:
        """`new_classification` with Burn's extension list (only "txt" is read).

        Args:
            root: The folder of class folders.
            extensions: The extensions; anything but "txt" is refused.

        Raises:
            DatasetError: An extension other than txt.
        """
        if any(e.lower().lstrip(".") != "txt" for e in extensions):
            raise DatasetError(f"Invalid file extension in {list(extensions)}: text folders read .txt files")
        found = scan_folder(root, ["txt"], "text")
        return cls(found, sorted({label for _, label in found}))

    @classmethod
    def new_classification_with_items(cls, items: Sequence[tuple[str | os.PathLike[str], str]],
                                      classes: Sequence[str]) -> TextFolderDataset:
        """`(text file, class name)` pairs.

        Args:
            items: The pairs.
            classes: The class names in id order.
        """
        return cls([(str(p), label) for p, label in items], classes)

    def num_classes(self) -> int:
        """The number of classes."""
        return len(self.classes)

    def len(self) -> int:
        return len(self.items)

    def get(self, index: int) -> TextDatasetItem | None:
        if not 0 <= index < len(self.items):
            return None
        path, label = self.items[index]
        return TextDatasetItem(TextData(decode_text(read_file(path)), path), label)


class TextCsvDataset(InMemDataset[TextClassificationItem]):
    """`from_csv(path, text_column, label_column)`: one `TextClassificationItem` per row.

    Labels are read by `encode_labels`: integer ids as written, or class names numbered in `classes`
    order (sorted names unless `classes` is given).

    Args:
        items: The items.
        classes: The class names in id order.

    Attributes:
        classes: The class names in id order.
    """

    def __init__(self, items: Sequence[TextClassificationItem], classes: Sequence[str]) -> None:
        super().__init__(items)
        self.classes = list(classes)

    def num_classes(self) -> int:
        """The number of classes."""
        return len(self.classes)

    @classmethod
    def from_csv(  # type: ignore[override]  # columns by name, not an item type
            cls, path: str | os.PathLike[str], text_column: str = "text", label_column: str = "label",
            classes: Sequence[str] | None = None, *, delimiter: str = ",") -> TextCsvDataset:
        """One item per row of the CSV file at `path` (with a header).

        Args:
            path: The CSV file.
            text_column: The text's column.
            label_column: The label's column: integer ids, or class names.
            classes: The class names in id order (None: the names found, sorted).
            delimiter: The field separator.

        Raises:
            MissingColumnError: A column is not in the header.
            EmptySplitError: No row after the header.
        """
        with open_text(path, "CSV file") as f:
            rows = csv.DictReader(f, delimiter=delimiter)
            header = [h.strip() for h in rows.fieldnames or []]
            for name in (text_column, label_column):
                if name not in header:
                    raise MissingColumnError(f"{path}: column {name!r} not found; the columns are {header}")
            rows.fieldnames = header
            pairs = [(row[text_column] or "", (row[label_column] or "").strip(), rows.line_num) for row in rows]
        if not pairs:
            raise EmptySplitError(f"{path}: no rows after the header")
        ids, names = encode_labels([label for _, label, _ in pairs], classes, str(path),
                                   [line for _, _, line in pairs])
        return cls([TextClassificationItem(text, i) for (text, _, _), i in zip(pairs, ids)], names)

    @classmethod
    def from_folder(cls, root: str | os.PathLike[str]) -> TextCsvDataset:
        """A text folder read into memory as `TextClassificationItem`s (for the same batcher).

        Args:
            root: The folder of class folders.
        """
        folder = TextFolderDataset.new_classification(root)
        return cls([TextClassificationItem(item.text.text, item.label) for item in folder.iter()], folder.classes)


@dataclasses.dataclass
class AgNewsItem:
    """Burn's AG News item: the class label as written (`"1"` to `"4"`: World, Sports, Business,
    Sci/Tech), the title and the article."""

    label: str  # "1" to "4"
    title: str  # the headline
    content: str  # the article


class AgNewsDataset:
    """`AgNewsDataset::new()` is `AgNewsDataset(root=None)`: AG News from fastai's `ag_news_csv/`
    folder (`train.csv`, 120,000 articles, and `test.csv`, 7,600; rows `label,title,content` without
    a header), which Burn downloads to `~/.cache/burn-dataset`. Here nothing is downloaded: the folder
    is looked for under `root`, else `$BURNLIKE_DATA` (or `./data`), then Burn's cache folder.
    `.train()` and `.test()` return an `InMemDataset` of `AgNewsItem`s.

    Args:
        root: Where to look for `ag_news_csv/` first (None: `$BURNLIKE_DATA`, then Burn's cache).

    Attributes:
        agnews_dir: The `ag_news_csv` folder found.

    Raises:
        DatasetNotFoundError: No `ag_news_csv` folder in any of those places.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        roots = source_roots(root)
        for base in roots:
            if (base / "ag_news_csv").is_dir():
                self.agnews_dir = base / "ag_news_csv"
                return
        raise DatasetNotFoundError(
            f"AG News not found: no ag_news_csv folder in {' or '.join(str(b.resolve()) for b in roots)}. "
            "Expected ag_news_csv/train.csv and ag_news_csv/test.csv (fastai's ag_news_csv.tgz, unpacked); "
            "nothing is downloaded. Point burnlike at the folder that holds ag_news_csv with "
            "AgNewsDataset(root) or BURNLIKE_DATA=<root>.")

    def train(self) -> InMemDataset[AgNewsItem]:
        """The training articles (`train.csv`)."""
        return self._parse_csv(self.agnews_dir / "train.csv")

    def test(self) -> InMemDataset[AgNewsItem]:
        """The test articles (`test.csv`)."""
        return self._parse_csv(self.agnews_dir / "test.csv")

    @staticmethod
    def _parse_csv(path: os.PathLike[str]) -> InMemDataset[AgNewsItem]:
        return InMemDataset.from_csv(path, AgNewsItem, has_headers=False)
