"""`examples/text_classification.py`, Burn's text classification example: it runs as a script
(--help), trains its transformer encoder on a text folder under a Noam schedule (the learning rate
warms up), predicts the test texts' classes, and reads CSVs as AG News is laid out; the model is
Burn's `TextClassificationModel` (its record's fields, Burn's encoder with GELU and quiet softmax)."""

import json
from pathlib import Path

import msgpack
import numpy as np
import pytest

import burnlike.nn
from tests.examples.helpers import example, run_with_help


def write_texts(root: Path, per_class: int, seed: int) -> Path:
    """`root/<class>/<i>.txt` for "sports" and "weather": six words of the class's own vocabulary."""
    rng = np.random.default_rng(seed)
    words = {"sports": ["goal", "match", "team", "score"], "weather": ["rain", "storm", "sunny", "cloud"]}
    for label, vocab in words.items():
        (root / label).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            (root / label / f"{i}.txt").write_text(" ".join(rng.choice(vocab, 6)) + " today")
    return root


def test_text_classification_runs_as_a_script_with_help(capsys, monkeypatch):
    code, out = run_with_help("text_classification", capsys, monkeypatch)
    assert code == 0 and out.startswith("usage: text_classification.py") and "Burn" in out and "--epochs" in out


@pytest.mark.slow
def test_text_classification_trains_with_noam_warmup_and_reads_a_csv(tmp_path):
    write_texts(tmp_path / "data" / "train", 12, 0)
    write_texts(tmp_path / "data" / "test", 3, 1)
    text = example("text_classification")
    out = text.main(["--data", str(tmp_path / "data"), "--epochs", "1", "--batch-size", "8", "--seq-length", "48",
                     "--d-model", "32", "--d-ff", "64", "--heads", "2", "--layers", "1", "--train-samples", "64",
                     "--test-samples", "16", "--artifact-dir", str(tmp_path / "run")])
    assert len(out["predicted"]) == 3 and set(out["predicted"]) <= {"sports", "weather"}
    assert out["expected"] == ["sports"] * 3  # the first test texts, in path order
    item = msgpack.unpackb((tmp_path / "run" / "model.mpk").read_bytes(), raw=False)["item"]
    assert list(item) == ["transformer", "embedding_token", "embedding_pos", "output", "n_classes"]  # model.rs
    layer = item["transformer"]["layers"][0]
    assert list(layer) == ["mha", "pwff", "norm_1", "norm_2", "dropout", "norm_first"]
    assert item["embedding_pos"]["weight"]["param"]["shape"] == [48, 32]
    encoder = out["model"].transformer
    assert isinstance(encoder.layers[0].pwff.activation.inner, burnlike.nn.Gelu)  # Burn's GELU, not torch's ReLU
    assert encoder.quiet_softmax and encoder.layers[0].mha.quiet_softmax and encoder.norm_first
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["seq_length"] == {"Fixed": 48} and config["transformer"]["quiet_softmax"] is True
    lr_log = (tmp_path / "run" / "train" / "epoch-1" / "Learning_Rate.log").read_text().split()
    assert len(lr_log) == 8 and float(lr_log[1].split(",")[0]) > float(lr_log[0].split(",")[0])  # Noam warm-up
    csv = tmp_path / "news.csv"
    csv.write_text("class,description\nsports,goal\nweather,rain\n")
    args = text.argparse.Namespace(data=None, train_csv=str(csv), test_csv=str(csv), text_column="description",
                                   label_column="class")
    train, test = text.load(args)
    assert train.classes == ["sports", "weather"] and [i.label for i in test.items] == [0, 1]
