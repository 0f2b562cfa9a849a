"""`burnlike.data.shakespeare`: Tiny Shakespeare read as nanoGPT's shakespeare_char prepares it (the
sorted characters, the first 90% of them to train on, the rest to validate on), and the message
that names the file when it is missing."""

import pytest

from burnlike.data import ShakespeareChar
from burnlike.data.dataset import DatasetError, DatasetNotFoundError
from tests.helpers.corpus import corpus_text, write_corpus


def test_the_splits_are_nanogpts_first_90_percent_and_the_rest(tmp_path):
    text = corpus_text(1001)
    corpus = ShakespeareChar.load(write_corpus(tmp_path, 1001))
    chars = sorted(set(text))
    n = int(len(text) * 0.9)  # prepare.py: train_data = data[:int(n*0.9)], val_data = data[int(n*0.9):]
    train, valid = corpus.train(9), corpus.valid(9)
    assert len(train) == n - 8 and len(valid) == len(text) - n - 8
    assert "".join(chars[i] for i in train[0].tolist()) == text[:9]
    assert "".join(chars[i] for i in train[len(train) - 1].tolist()) == text[n - 9:n]
    assert "".join(chars[i] for i in valid[0].tolist()) == text[n:n + 9]
    assert corpus.vocab.chars == chars and corpus.path == tmp_path / "shakespeare_char" / "input.txt"


def test_the_root_defaults_to_burnlike_data(tmp_path, monkeypatch):
    monkeypatch.setenv("BURNLIKE_DATA", str(write_corpus(tmp_path, 300)))
    assert ShakespeareChar.load().tokens.numel() == 300


def test_a_missing_text_names_the_file_and_where_it_comes_from(tmp_path):
    with pytest.raises(DatasetNotFoundError) as e:
        ShakespeareChar.load(tmp_path / "nowhere")
    message = str(e.value)
    assert f"{tmp_path / 'nowhere' / 'shakespeare_char' / 'input.txt'} not found" in message
    assert "tinyshakespeare/input.txt" in message and "data.root" in message


def test_a_split_shorter_than_a_window_is_named(tmp_path):
    corpus = ShakespeareChar.load(write_corpus(tmp_path, 100))
    with pytest.raises(DatasetError, match="the validation split has 10 characters, fewer than one window of 65"):
        corpus.valid(65)
    with pytest.raises(DatasetError, match="train_fraction must be in"):
        ShakespeareChar.from_text("abc", 1.0)
