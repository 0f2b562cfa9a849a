"""`burnlike.data.text`: the byte and character tokenizers (encode, decode, vocabulary size, the
class token first and the special tokens skipped on decode), Burn's `SeqLengthOption` and
`generate_padding_mask` (NoMax, Max, Fixed; int64 tokens whatever the pad token's type), and
`TextClassificationBatcher`, which takes any tokenizer or callable and any item with `.text` and
`.label` (or plain strings, for inference) and names what it refuses; `CharVocab` (nanoGPT's
character ids) and `TokenWindowsBatcher` (a window's first tokens in, the same shifted by one out)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from burnlike.data import (
    ByteTokenizer,
    CharTokenizer,
    CharVocab,
    SeqLengthOption,
    TextClassificationBatch,
    TextClassificationBatcher,
    TextClassificationInferenceBatch,
    TokenWindowBatch,
    TokenWindowsBatcher,
)
from burnlike.data.dataset import TextClassificationItem, TokenWindowsDataset
from burnlike.data.text import GeneratePaddingMask, generate_padding_mask
from tests.helpers.expect import raises_exactly


@dataclasses.dataclass
class Review:
    text: str
    label: int


@dataclasses.dataclass
class Scored:
    text: bytes
    label: int


# --- tokenizers ---------------------------------------------------------------------------------------------
def test_byte_and_char_tokenizers_encode_decode_and_vocab_size():
    byte = ByteTokenizer()
    assert byte.encode("hé") == [1, ord("h") + 3, 0xC3 + 3, 0xA9 + 3] and byte.decode(byte.encode("hé")) == "hé"
    assert byte.vocab_size() == 259 and byte.pad_token() == 0
    chars = CharTokenizer.from_texts(["abba", "cab"])
    assert chars.alphabet == ["a", "b", "c"] and chars.encode("cz") == [1, 5, 2] and chars.decode([1, 5, 3]) == "ca"
    assert chars.vocab_size() == 6


def test_byte_tokenizer_decode_skips_special_tokens_and_replaces_bad_utf8():
    tok = ByteTokenizer()
    assert tok.decode([3, 3 + ord("a")]) == "\x00a"  # token 3 is byte 0
    assert tok.decode([0, 1, 2, 259, 300, 3 + ord("b")]) == "b"  # special and out-of-range tokens are skipped
    assert tok.decode([3 + 0xFF, 3 + ord("c")]) == "\ufffdc"  # invalid UTF-8 is replaced, not an error
    assert tok.decode(tok.encode("héllo ✓")) == "héllo ✓"


def test_char_tokenizer_orders_by_frequency_skips_unknown_and_refuses_strings():
    tok = CharTokenizer.from_texts(["bbca"])  # b twice; c and a once each: ties in character order
    assert tok.alphabet == ["b", "a", "c"]
    assert tok.decode([3, 4, 5, 6, 0, 2]) == "bac"  # 6 is past the alphabet: skipped
    assert CharTokenizer.from_texts(["bbca", "a"], min_count=2).alphabet == ["a", "b"]
    with raises_exactly(ValueError, "the alphabet must be single characters"):
        CharTokenizer(["ab", "c"])


# --- sequence lengths and the padding mask ------------------------------------------------------------------
def test_seq_length_option_constructors_equal_their_kinds():
    assert SeqLengthOption.NoMax() == SeqLengthOption("no_max") == SeqLengthOption.of(None)
    assert SeqLengthOption.of(4) == SeqLengthOption("max", 4)
    assert SeqLengthOption.Fixed(4) == SeqLengthOption("fixed", 4)


def test_sequence_lengths_must_be_positive_integers():
    assert SeqLengthOption.Max(1).resolve(5) == 1 and SeqLengthOption.Fixed(1).resolve(0) == 1
    for bad in (0, True, "5", 2.0):
        with pytest.raises(ValueError, match=r"^a sequence length must be an integer >= 1, got "):
            SeqLengthOption.Max(bad)


def test_padding_mask_follows_burns_seq_length_options():
    seqs = [[5, 6, 7], [8]]
    tokens, mask = generate_padding_mask(0, seqs, SeqLengthOption.NoMax())
    assert tokens.tolist() == [[5, 6, 7], [8, 0, 0]] and mask.tolist() == [[False] * 3, [False, True, True]]
    assert generate_padding_mask(0, seqs, SeqLengthOption.Max(2))[0].tolist() == [[5, 6], [8, 0]]
    assert generate_padding_mask(0, seqs, SeqLengthOption.Max(9))[0].shape == (2, 3)
    assert generate_padding_mask(9, seqs, SeqLengthOption.Fixed(5))[0].tolist() == [[5, 6, 7, 9, 9], [8, 9, 9, 9, 9]]
    assert generate_padding_mask(0, seqs, 2)[0].shape == (2, 2)  # an int is Max(n), as Burn's From<Option<usize>>
    assert generate_padding_mask(0, [], None)[0].shape == (0, 1)
    with pytest.raises(ValueError):
        SeqLengthOption.Fixed(0)


def test_padding_mask_is_burns_struct_on_the_device_and_seq_length_is_a_burn_enum():
    """burn-nn/src/modules/attention/mask.rs (v0.21.0): `generate_padding_mask(pad_token, tokens_list,
    seq_length, &device) -> GeneratePaddingMask { tensor, mask }`, `SeqLengthOption::NoMax` a unit variant."""
    out = generate_padding_mask(0, [[5, 6, 7], [8]], SeqLengthOption.NoMax, "meta")
    assert isinstance(out, GeneratePaddingMask) and out.tensor.device.type == "meta" and out.mask.device.type == "meta"
    cpu = generate_padding_mask(0, [[5, 6, 7], [8]], SeqLengthOption.NoMax, torch.device("cpu"))
    assert cpu.tensor.tolist() == [[5, 6, 7], [8, 0, 0]] and cpu.mask.tolist() == [[False] * 3, [False, True, True]]
    tokens, mask = cpu  # still a pair
    assert tokens is cpu.tensor and mask is cpu.mask
    assert SeqLengthOption.NoMax is SeqLengthOption.NoMax() is SeqLengthOption.of(None)


def test_padding_tokens_are_int64_whatever_the_pad_tokens_type():
    tokens, mask = generate_padding_mask(np.int32(9), [[1, 2, 3], [4]])
    assert tokens.dtype == torch.int64 and tokens.tolist() == [[1, 2, 3], [4, 9, 9]]
    assert mask.tolist() == [[False] * 3, [False, True, True]]


# --- the batcher --------------------------------------------------------------------------------------------
def test_text_batcher_takes_any_tokenizer():
    items = [TextClassificationItem("ab", 1), TextClassificationItem("abcd", 0)]
    batch = TextClassificationBatcher(ByteTokenizer(), SeqLengthOption.Fixed(4)).batch(items)
    assert isinstance(batch, TextClassificationBatch) and batch.labels.tolist() == [1, 0]
    assert batch.tokens.tolist() == [[1, 100, 101, 0], [1, 100, 101, 102]]
    assert batch.mask_pad.tolist() == [[False, False, False, True], [False] * 4]
    words = TextClassificationBatcher(lambda s: [len(w) for w in s.split()], pad_token=-1).batch(["a bb", "ccc"])
    assert isinstance(words, TextClassificationInferenceBatch) and words.tokens.tolist() == [[1, 2], [3, -1]]
    assert words.mask_pad.tolist() == [[False, False], [False, True]]
    moved = TextClassificationBatcher(ByteTokenizer()).batch(items, device="meta")
    assert moved.tokens.device.type == "meta" and moved.mask_pad.device.type == "meta"
    with pytest.raises(TypeError, match="tokenizer"):
        TextClassificationBatcher(3)


def test_text_batcher_takes_any_item_with_text_and_label():
    batch = TextClassificationBatcher(ByteTokenizer()).batch([Review("ab", 1), Review("c", 0)])
    assert batch.tokens.tolist() == [[1, 3 + ord("a"), 3 + ord("b")], [1, 3 + ord("c"), 0]]
    assert batch.labels.tolist() == [1, 0]
    with raises_exactly(TypeError, "expected items with .text and .label (or strings), got Scored"):
        TextClassificationBatcher(ByteTokenizer()).batch([Scored(b"ab", 1)])


def test_text_batcher_pad_tokens_lengths_and_refusals():
    explicit = TextClassificationBatcher(ByteTokenizer(), pad_token=7)
    assert explicit.pad == 7 and explicit.tokenizer.__class__ is ByteTokenizer
    assert TextClassificationBatcher(ByteTokenizer()).pad == 0
    plain = TextClassificationBatcher(lambda s: [ord(c) for c in s])
    assert plain.pad == 0
    batch = plain.batch(["ab", "c"])
    assert batch.tokens.tolist() == [[97, 98], [99, 0]] and batch.mask_pad.tolist() == [[False, False], [False, True]]
    assert TextClassificationBatcher(lambda s: [ord(c) for c in s], pad_token=5).batch(["ab", "c"]).tokens.tolist() == [
        [97, 98], [99, 5]]
    fixed = TextClassificationBatcher(ByteTokenizer(), seq_length=SeqLengthOption.Fixed(4)).batch(["a", "abcdef"])
    assert fixed.tokens.shape == (2, 4) and fixed.tokens[1].tolist() == [1, 100, 101, 102]
    with pytest.raises(TypeError, match=r"^tokenizer must be a Tokenizer or a callable str -> token ids, got int$"):
        TextClassificationBatcher(3)
    with pytest.raises(ValueError, match=r"^cannot batch zero texts$"):
        plain.batch([])

    class NoText:
        label = 1

    with pytest.raises(TypeError, match=r"^expected items with \.text and \.label \(or strings\), got NoText$"):
        plain.batch([NoText()])


# --- the character language model's pieces -------------------------------------------------------------
def test_char_vocab_is_the_sorted_characters_as_nanogpt_encodes_them():
    text = "to be, or not to be:\nthat is the question"
    vocab = CharVocab.from_text(text)
    chars = sorted(set(text))  # nanoGPT's prepare.py: stoi = {ch: i for i, ch in enumerate(sorted(set(data)))}
    assert vocab.vocab_size() == len(chars) and vocab.chars == chars
    assert vocab.encode(text) == [chars.index(c) for c in text]
    assert vocab.encode_tensor(text).tolist() == vocab.encode(text)
    assert vocab.encode_tensor(text).dtype == torch.int64
    assert vocab.decode(vocab.encode(text)) == text and vocab.decode(torch.tensor(vocab.encode("be"))) == "be"


@pytest.mark.parametrize("text", ["toby\u00e9", "to\U0001f600be", "xto"])
def test_char_vocab_names_a_character_it_lacks(text):
    vocab = CharVocab("tobe")
    for encode in (vocab.encode, vocab.encode_tensor):
        with pytest.raises(ValueError, match=f"CharVocab: {next(c for c in text if c not in 'tobe')!r} is not one "
                                             "of the vocabulary's 4 characters"):
            encode(text)


def test_windows_batch_into_inputs_and_targets_shifted_by_one():
    """Target t is the token after input t: a window of T + 1 tokens gives T of each."""
    stream = torch.tensor([7, 3, 9, 4, 1, 8, 2, 6, 5, 0])
    ds = TokenWindowsDataset(stream, 5)
    batcher = TokenWindowsBatcher()
    for items in (ds.__getitems__([0, 3, 5]), [ds[0], ds[3], ds[5]]):  # the batched fetch, and items one by one
        batch = batcher.batch(items)
        assert isinstance(batch, TokenWindowBatch) and batch.inputs.shape == batch.targets.shape == (3, 4)
        for row, start in enumerate((0, 3, 5)):
            assert batch.inputs[row].tolist() == stream[start:start + 4].tolist()
            assert batch.targets[row].tolist() == stream[start + 1:start + 5].tolist()
    assert batcher.batch([ds[0]], "cpu").inputs.device.type == "cpu"


@pytest.mark.parametrize(("items", "message"), [
    ([], "cannot batch zero windows"),
    ([torch.tensor([1])], r"expected windows of at least 2 tokens, got a batch of shape \(1, 1\)"),
])
def test_windows_batcher_refuses_what_it_cannot_shift(items, message):
    with pytest.raises(ValueError, match=message):
        TokenWindowsBatcher().batch(items)
