"""`burnlike.data.dataset.nlp`: the text classification datasets. `TextFolderDataset` labels each
.txt file by its folder (or by the classes given with the items) and decodes it in Burn's order (a
BOM, then UTF-8, then GB18030, then lossy UTF-8); `TextCsvDataset` reads a text and a label column,
numbering labels by class name, and reads a text folder too. Missing folders, empty splits, other
extensions and unknown labels are named. `AgNewsDataset` reads fastai's AG News CSVs (Burn's rows)
from a local folder, naming it and the files when they are missing."""

from __future__ import annotations

import codecs

import pytest

from burnlike.data.dataset import (
    AgNewsDataset,
    AgNewsItem,
    DatasetError,
    DatasetNotFoundError,
    EmptySplitError,
    MissingColumnError,
    TextClassificationItem,
    TextCsvDataset,
    TextFolderDataset,
)
from burnlike.data.dataset.nlp import decode_text
from tests.helpers.expect import raises_exactly


# --- decoding text files ------------------------------------------------------------------------------------
def test_text_decoding_follows_burns_detection_order():
    assert decode_text(codecs.BOM_UTF8 + "héllo".encode()) == "héllo"
    assert decode_text(codecs.BOM_UTF16_LE + "hé".encode("utf-16-le")) == "hé"
    assert decode_text(codecs.BOM_UTF16_BE + "hé".encode("utf-16-be")) == "hé"
    assert decode_text("中文".encode("gb18030")) == "中文"
    assert decode_text(b"ok \xff") == "ok \ufffd"  # neither UTF-8 nor GB18030: lossy UTF-8


# --- text folders -------------------------------------------------------------------------------------------
def test_text_folder_labels_by_folder_and_detects_encodings(tmp_path):
    (tmp_path / "pos").mkdir()
    (tmp_path / "neg").mkdir()
    (tmp_path / "pos" / "a.txt").write_bytes("très bien".encode())
    (tmp_path / "neg" / "b.txt").write_bytes(b"\xff\xfe" + "nul".encode("utf-16-le"))
    (tmp_path / "neg" / "c.txt").write_bytes("\ufeffbad".encode("utf-8"))
    (tmp_path / "neg" / "d.md").write_text("ignored")
    ds = TextFolderDataset.new_classification(tmp_path)
    assert ds.classes == ["neg", "pos"] and ds.len() == 3
    got = [(item.text.text, item.label, item.text.text_path.endswith(name)) for item, name in
           zip(ds.iter(), ["b.txt", "c.txt", "a.txt"])]
    assert got == [("nul", 0, True), ("bad", 0, True), ("très bien", 1, True)]
    with pytest.raises(DatasetNotFoundError, match="text folder .*nowhere not found"):
        TextFolderDataset.new_classification(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmptySplitError, match=r"no text files \(\*\.txt\) under .*empty"):
        TextFolderDataset.new_classification(tmp_path / "empty")


def test_text_folder_items_given_by_hand_are_labelled_by_class_index(tmp_path):
    (tmp_path / "a.txt").write_text("good film")
    (tmp_path / "b.txt").write_text("bad film")
    data = TextFolderDataset.new_classification_with_items([(tmp_path / "a.txt", "pos"), (str(tmp_path / "b.txt"), "neg")],
                                                           ["neg", "pos"])
    assert data.num_classes() == 2 and data.len() == 2
    first, second = data.get(0), data.get(1)
    assert (first.text.text, first.text.text_path, first.label) == ("good film", str(tmp_path / "a.txt"), 1)
    assert (second.text.text, second.label) == ("bad film", 0)
    with pytest.raises(DatasetError, match=r"a.txt: label 'meh' is not one of the classes \['neg', 'pos'\]"):
        TextFolderDataset.new_classification_with_items([(tmp_path / "a.txt", "meh")], ["neg", "pos"])


# --- text CSV files -----------------------------------------------------------------------------------------
def test_text_csv_numbers_labels_by_class_name_or_as_written_ids(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('review,sentiment\n"good, really",positive\nawful,negative\nmeh,positive\n')
    ds = TextCsvDataset.from_csv(path, "review", "sentiment")
    assert ds.classes == ["negative", "positive"]
    assert ds.items == [TextClassificationItem("good, really", 1), TextClassificationItem("awful", 0),
                        TextClassificationItem("meh", 1)]
    path.write_text("text,label\na,2\nb,0\n")
    assert [i.label for i in TextCsvDataset.from_csv(path).items] == [2, 0]
    assert TextCsvDataset.from_csv(path).classes == ["0", "1", "2"]
    with pytest.raises(DatasetError, match=r"line 2: label '2' is not one of the classes \['0', '1'\]"):
        TextCsvDataset.from_csv(path, classes=["0", "1"])
    with pytest.raises(MissingColumnError, match="column 'body' not found"):
        TextCsvDataset.from_csv(path, text_column="body")
    path.write_text("text,label\n")
    with pytest.raises(EmptySplitError, match="no rows"):
        TextCsvDataset.from_csv(path)


def test_a_text_folder_read_as_a_csv_dataset_keeps_each_files_label(tmp_path):
    for label, texts in {"neg": ["bad", "awful"], "pos": ["good"]}.items():
        (tmp_path / label).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / label / f"{i}.txt").write_text(text)
    data = TextCsvDataset.from_folder(tmp_path)
    items = sorted((data.get(i).text, data.get(i).label) for i in range(len(data)))
    classes = list(data.classes)
    assert sorted(classes) == ["neg", "pos"]
    assert items == sorted([("bad", classes.index("neg")), ("awful", classes.index("neg")),
                            ("good", classes.index("pos"))])


# --- refusals -----------------------------------------------------------------------------------------------
def test_text_folders_and_csv_name_what_is_wrong(tmp_path):
    (tmp_path / "pos").mkdir()
    (tmp_path / "pos" / "a.txt").write_text("good")
    assert TextFolderDataset.new_classification_with(tmp_path, [".TXT"]).get(0).text.text == "good"
    with raises_exactly(DatasetError, "Invalid file extension in ['.md']: text folders read .txt files"):
        TextFolderDataset.new_classification_with(tmp_path, [".md"])
    items = TextFolderDataset.new_classification_with_items([(tmp_path / "pos" / "a.txt", "pos")], ["neg", "pos"])
    item = items.get(0)
    assert (item.text.text, item.text.text_path, item.label) == ("good", str(tmp_path / "pos" / "a.txt"), 1)
    with raises_exactly(DatasetError, f"{tmp_path / 'pos' / 'a.txt'}: label 'pos' is not one of the classes ['neg']"):
        TextFolderDataset.new_classification_with_items([(tmp_path / "pos" / "a.txt", "pos")], ["neg"])
    path = tmp_path / "t.csv"
    path.write_text("text;label\n;b\nhi;a\n")
    data = TextCsvDataset.from_csv(path, delimiter=";")
    assert [(i.text, i.label) for i in data.items] == [("", 1), ("hi", 0)] and data.classes == ["a", "b"]
    path.write_text("text,label\nx,\ny,a\n")
    with raises_exactly(DatasetError, f"{path} line 2: label '' is not one of the classes ['a']"):
        TextCsvDataset.from_csv(path, classes=["a"])


# --- AG News ------------------------------------------------------------------------------------------------
AG_TRAIN = (  # the first and last rows of fastai's train.csv, as Burn's tests check them
    '"3","Wall St. Bears Claw Back Into the Black (Reuters)","Reuters - Short-sellers, Wall Street\'s dwindling\\'
    'band of ultra-cynics, are seeing green again."\n'
    '"2","Nets get Carter from Raptors","INDIANAPOLIS -- All-Star Vince Carter was traded by the Toronto Raptors '
    'to the New Jersey Nets for Alonzo Mourning, Eric Williams, Aaron Williams, and a pair of first-round draft '
    'picks yesterday."\n'
)


def test_ag_news_reads_fastais_csv_files(tmp_path, monkeypatch):
    folder = tmp_path / "ag_news_csv"
    folder.mkdir()
    (folder / "train.csv").write_text(AG_TRAIN, encoding="utf-8")
    (folder / "test.csv").write_text('"3","EBay gets into rentals","EBay plans to buy \\$415 million."\n',
                                     encoding="utf-8")
    monkeypatch.setenv("BURNLIKE_DATA", str(tmp_path))
    agnews = AgNewsDataset()
    train, test = agnews.train(), agnews.test()
    assert (train.len(), test.len()) == (2, 1)
    assert train.get(0) == AgNewsItem("3", "Wall St. Bears Claw Back Into the Black (Reuters)",
                                      "Reuters - Short-sellers, Wall Street's dwindling\\band of ultra-cynics, "
                                      "are seeing green again.")
    assert train.get(1).label == "2" and train.get(1).title == "Nets get Carter from Raptors"
    assert test.get(0) == AgNewsItem("3", "EBay gets into rentals", "EBay plans to buy \\$415 million.")
    assert AgNewsDataset(tmp_path).agnews_dir == folder


def test_ag_news_names_the_missing_folder_and_files(tmp_path):
    with raises_exactly(DatasetNotFoundError, f"AG News not found: no ag_news_csv folder in {tmp_path.resolve()}. "
                        "Expected ag_news_csv/train.csv and ag_news_csv/test.csv (fastai's ag_news_csv.tgz, "
                        "unpacked); nothing is downloaded. Point burnlike at the folder that holds ag_news_csv with "
                        "AgNewsDataset(root) or BURNLIKE_DATA=<root>."):
        AgNewsDataset(tmp_path)
    (tmp_path / "ag_news_csv").mkdir()
    with raises_exactly(DatasetNotFoundError, f"CSV file {tmp_path / 'ag_news_csv' / 'test.csv'} not found"):
        AgNewsDataset(tmp_path).test()
    (tmp_path / "ag_news_csv" / "train.csv").write_text('"1","only a title"\n')
    with pytest.raises(DatasetError, match=r"train.csv line 1: 2 values for the 3 fields of AgNewsItem"):
        AgNewsDataset(tmp_path).train()
