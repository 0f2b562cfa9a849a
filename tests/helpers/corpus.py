"""A small Tiny-Shakespeare-shaped text on disk (`<root>/shakespeare_char/input.txt`), for the tests
of the character language model's data, app option, example and recipe."""

from __future__ import annotations

import random
from pathlib import Path

LINES = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\n",
    "All:\nSpeak, speak.\n\n",
    "MENENIUS:\nWhy, masters, my good friends, mine honest neighbours,\nWill you undo yourselves?\n\n",
    "ROMEO:\nBut, soft! what light through yonder window breaks?\n\n",
    "JULIET:\nO Romeo, Romeo! wherefore art thou Romeo?\n\n",
)


def corpus_text(n_chars: int = 6000, seed: int = 0) -> str:
    """`n_chars` characters of the lines above in a seeded order."""
    rng = random.Random(seed)
    parts, size = [], 0
    while size < n_chars:
        parts.append(rng.choice(LINES))
        size += len(parts[-1])
    return "".join(parts)[:n_chars]


def write_corpus(root: Path, n_chars: int = 6000) -> Path:
    """`root` holding `shakespeare_char/input.txt` of `corpus_text(n_chars)`."""
    folder = root / "shakespeare_char"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "input.txt").write_text(corpus_text(n_chars), encoding="utf-8")
    return root


def vocab_size(n_chars: int = 6000) -> int:
    return len(set(corpus_text(n_chars)))
