"""Text batching: tokenizers, the text-classification batcher (over Burn's `generate_padding_mask`,
which lives in `burnlike.nn.attention`, as in Burn, and is re-exported here) and the language-model
batcher over token windows.

Burn's example tokenizes with BERT's; that needs a download, so two small tokenizers are built in
(bytes of UTF-8, or characters seen in a corpus). Any object with Burn's `Tokenizer` methods, or any
callable `str -> list[int]`, works instead. Both built-ins put a class token first: the model
classifies from position 0, as Burn's does with BERT's `[CLS]`. A character language model reads
plain ids instead (`CharVocab`: nanoGPT's shakespeare_char encoding, no special tokens).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor

from burnlike.data.batch import TensorBatch
from burnlike.data.dataset.nlp import TextClassificationItem, TextDatasetItem
from burnlike.nn.attention import GeneratePaddingMask, SeqLengthOption, generate_padding_mask

__all__ = [
    "ByteTokenizer",
    "CharTokenizer",
    "CharVocab",
    "GeneratePaddingMask",
    "SeqLengthOption",
    "TextClassificationBatch",
    "TextClassificationBatcher",
    "TextClassificationInferenceBatch",
    "TokenWindowBatch",
    "TokenWindowsBatcher",
    "Tokenizer",
    "generate_padding_mask",
]

PAD, CLS, UNK = 0, 1, 2  # the built-in tokenizers' special tokens


@runtime_checkable
class Tokenizer(Protocol):
    """Burn's `Tokenizer` trait (the text-classification example's)."""

    def encode(self, value: str) -> list[int]:
        """Token ids of `value`.

        Args:
            value: The text.
        """
        ...

    def decode(self, tokens: Sequence[int]) -> str:
        """The text of `tokens` (special tokens left out).

        Args:
            tokens: Token ids.
        """
        ...

    def vocab_size(self) -> int:
        """The number of token ids, special tokens included."""
        ...

    def pad_token(self) -> int:
        """The padding token's id."""
        ...


class ByteTokenizer:
    """UTF-8 bytes: token `3 + b` for byte `b`, after a class token; 259 tokens, nothing to learn."""

    def encode(self, value: str) -> list[int]:
        """The class token, then `3 + b` per UTF-8 byte `b` of `value`.

        Args:
            value: The text.
        """
        return [CLS, *(b + 3 for b in value.encode("utf-8"))]

    def decode(self, tokens: Sequence[int]) -> str:
        """The text of the byte tokens (special tokens left out; bad UTF-8 replaced).

        Args:
            tokens: Token ids.
        """
        return bytes(t - 3 for t in tokens if 3 <= t < 259).decode("utf-8", errors="replace")

    def vocab_size(self) -> int:
        """259: three special tokens and 256 bytes."""
        return 259

    def pad_token(self) -> int:
        """The padding token, 0."""
        return PAD


class CharTokenizer:
    """One token per character of `alphabet` (token `3 + i`); unseen characters are `UNK` (2).

    Args:
        alphabet: The characters, in id order (repeats dropped).

    Attributes:
        alphabet: The characters, in id order.

    Raises:
        ValueError: An entry that is not a single character.
    """

    def __init__(self, alphabet: Iterable[str]) -> None:
        self.alphabet = list(dict.fromkeys(alphabet))
        if any(len(c) != 1 for c in self.alphabet):
            raise ValueError("the alphabet must be single characters")
        self._ids = {c: i + 3 for i, c in enumerate(self.alphabet)}

    @classmethod
    def from_texts(cls, texts: Iterable[str], min_count: int = 1) -> CharTokenizer:
        """The characters seen at least `min_count` times, most frequent first.

        Args:
            texts: The texts to count in.
            min_count: The fewest times a character must occur.
        """
        counts = Counter(c for text in texts for c in text)
        return cls(c for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= min_count)

    def encode(self, value: str) -> list[int]:
        """The class token, then one token per character (`UNK` for one outside the alphabet).

        Args:
            value: The text.
        """
        ids = self._ids
        return [CLS, *(ids.get(c, UNK) for c in value)]

    def decode(self, tokens: Sequence[int]) -> str:
        """The text of the character tokens (special tokens left out).

        Args:
            tokens: Token ids.
        """
        return "".join(self.alphabet[t - 3] for t in tokens if 3 <= t < len(self.alphabet) + 3)

    def vocab_size(self) -> int:
        """The alphabet's size plus the three special tokens."""
        return len(self.alphabet) + 3

    def pad_token(self) -> int:
        """The padding token, 0."""
        return PAD


class CharVocab:
    """Characters as ids `0 .. n-1` in sorted order, no special tokens: nanoGPT's shakespeare_char
    encoding (`stoi`/`itos`), so a model trained on it reads the same ids. `encode` refuses a
    character outside the vocabulary (naming it): a prompt must use the corpus's characters.

    Args:
        chars: The characters (sorted and deduplicated here).

    Attributes:
        chars: The characters, sorted: id `i` is `chars[i]`.

    Raises:
        ValueError: An entry that is not a single character.
    """

    def __init__(self, chars: Iterable[str]) -> None:
        self.chars = sorted(set(chars))
        if any(len(c) != 1 for c in self.chars):
            raise ValueError("CharVocab: the vocabulary must be single characters")
        self._ids = {c: i for i, c in enumerate(self.chars)}
        points = np.array([ord(c) for c in self.chars], dtype=np.int64)
        self._table = np.full(int(points.max(initial=0)) + 1, -1, dtype=np.int64)  # code point -> id
        self._table[points] = np.arange(len(points))

    @classmethod
    def from_text(cls, text: str) -> CharVocab:
        """The vocabulary of the characters in `text`.

        Args:
            text: The corpus.
        """
        return cls(text)

    def encode(self, value: str) -> list[int]:
        """The id of each character of `value`.

        Args:
            value: The text.

        Raises:
            ValueError: A character outside the vocabulary, naming it.
        """
        ids = self._ids
        try:
            return [ids[c] for c in value]
        except KeyError as e:
            raise ValueError(f"CharVocab: {e.args[0]!r} is not one of the vocabulary's {len(self.chars)} "
                             "characters") from None

    def encode_tensor(self, text: str) -> Tensor:
        """`encode(text)` as an int64 tensor, through numpy (a whole corpus at once).

        Args:
            text: The text.

        Raises:
            ValueError: A character outside the vocabulary, naming it.
        """
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        ids = self._table[np.minimum(codes, self._table.size - 1)]
        ids[codes >= self._table.size] = -1
        if (ids < 0).any():
            self.encode(text[int(np.argmax(ids < 0))])  # raises, naming the character
        return torch.from_numpy(ids)

    def decode(self, tokens: Sequence[int] | Tensor) -> str:
        """The text of `tokens`.

        Args:
            tokens: Ids, a sequence or a tensor.
        """
        values = tokens.tolist() if isinstance(tokens, Tensor) else tokens
        return "".join(self.chars[int(t)] for t in values)

    def vocab_size(self) -> int:
        """The number of characters."""
        return len(self.chars)


@dataclasses.dataclass
class TokenWindowBatch(TensorBatch):
    """A language model's batch: `inputs` `[B, T]` and `targets` `[B, T]` (the inputs shifted by one:
    `targets[:, t]` is the token after `inputs[:, t]`), both int64."""

    inputs: Tensor  # int64 [B, T]: each window's first T tokens
    targets: Tensor  # int64 [B, T]: each window's last T tokens


class TokenWindowsBatcher:
    """Windows of `T + 1` tokens (a `TokenWindowsDataset`'s items, or its batched fetch) -> a
    `TokenWindowBatch`: each window's first `T` tokens are the inputs, its last `T` the targets."""

    def batch(self, items: Sequence[Tensor], device: Any = None) -> TokenWindowBatch:
        """The batch of the windows.

        Args:
            items: Windows of `T + 1` tokens each, or a `TokenWindows` batched fetch.
            device: Where the batch goes (None: where the windows are).

        Raises:
            ValueError: No window, or windows shorter than 2 tokens.
        """
        if not len(items):
            raise ValueError("cannot batch zero windows")
        windows = getattr(items, "tensor", None)  # TokenWindows: already one [B, T + 1] tensor
        if not isinstance(windows, Tensor):
            windows = torch.stack([torch.as_tensor(item) for item in items])
        if windows.dim() != 2 or windows.shape[1] < 2:
            raise ValueError(f"TokenWindowsBatcher: expected windows of at least 2 tokens, got a batch of shape "
                             f"{tuple(windows.shape)}")
        windows = windows.to(torch.int64)
        batch = TokenWindowBatch(windows[:, :-1], windows[:, 1:])
        return batch.to(device) if device is not None else batch


@dataclasses.dataclass
class TextClassificationBatch(TensorBatch):
    """A text-classification training batch: token ids, labels and the padding mask."""

    tokens: Tensor  # int64 [B, L]
    labels: Tensor  # int64 [B]
    mask_pad: Tensor  # bool [B, L], True at padding


@dataclasses.dataclass
class TextClassificationInferenceBatch(TensorBatch):
    """A text-classification inference batch: token ids and the padding mask, no labels."""

    tokens: Tensor  # int64 [B, L]
    mask_pad: Tensor  # bool [B, L], True at padding


class TextClassificationBatcher:
    """Items with `.text` and `.label` (or plain strings, for inference) -> token ids + padding mask.

    `tokenizer` is a `Tokenizer` (its pad token is used) or a callable `str -> list[int]` with
    `pad_token` given (0 by default).

    Args:
        tokenizer: A `Tokenizer`, or a callable `str -> token ids`.
        seq_length: How long the batch's sequences are: `SeqLengthOption.NoMax` (the longest, the
            default), `Max(n)`, `Fixed(n)`, or an int for `Max` (Burn's `From<Option<usize>>`).
        pad_token: The padding id (None: the tokenizer's, or 0 for a callable).

    Attributes:
        pad: The padding id.
        tokenizer: The tokenizer as given.
        seq_length: The sequence-length rule.

    Raises:
        TypeError: `tokenizer` is neither.
    """

    def __init__(self, tokenizer: Tokenizer | Callable[[str], Sequence[int]],
                 seq_length: SeqLengthOption | int | None = None, pad_token: int | None = None) -> None:
        if isinstance(tokenizer, Tokenizer):
            self._encode: Callable[[str], Sequence[int]] = tokenizer.encode
            self.pad = tokenizer.pad_token() if pad_token is None else pad_token
        elif callable(tokenizer):
            self._encode, self.pad = tokenizer, 0 if pad_token is None else pad_token
        else:
            raise TypeError(f"tokenizer must be a Tokenizer or a callable str -> token ids, got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer
        self.seq_length = SeqLengthOption.of(seq_length)

    def batch(self, items: Sequence[Any], device: Any = None) -> TextClassificationBatch | TextClassificationInferenceBatch:
        """A training batch of items with `.text` and `.label`, or an inference batch of strings.

        Args:
            items: The items, or plain strings.
            device: Where the batch goes (None: the CPU).

        Raises:
            ValueError: No item.
        """
        if not items:
            raise ValueError("cannot batch zero texts")
        if all(isinstance(item, str) for item in items):
            tokens, mask = generate_padding_mask(self.pad, [self._encode(t) for t in items], self.seq_length)
            batch: Any = TextClassificationInferenceBatch(tokens, mask)
        else:
            texts = [_text(item) for item in items]
            tokens, mask = generate_padding_mask(self.pad, [self._encode(t) for t in texts], self.seq_length)
            labels = torch.tensor([int(item.label) for item in items], dtype=torch.int64)
            batch = TextClassificationBatch(tokens, labels, mask)
        moved: TextClassificationBatch | TextClassificationInferenceBatch = batch.to(device) if device is not None else batch
        return moved


def _text(item: Any) -> str:
    if isinstance(item, TextClassificationItem):
        return item.text
    if isinstance(item, TextDatasetItem):
        return item.text.text
    text = getattr(item, "text", None)
    if isinstance(text, str):
        return text
    raise TypeError(f"expected items with .text and .label (or strings), got {type(item).__name__}")
