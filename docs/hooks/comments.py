"""A config field's description is its comment: the comment lines right above the field and the
one after it on its line. The Hydra keys page (hydra_keys.py) and the API reference
(griffe_docstrings.py) both read it here."""

from __future__ import annotations

import io
import tokenize

LINT_COMMENTS = ("noqa", "type:", "pragma", "pyright:", "mypy:")  # a tool's, not a description


def field_comment(lines: list[str], lineno: int) -> str:
    """The comment of the field that starts on `lines[lineno - 1]` (1-based), "" when it has none.

    Args:
        lines: The source's lines.
        lineno: The field's first line.
    """
    above: list[str] = []
    row = lineno - 1
    while row >= 1 and lines[row - 1].strip().startswith("#"):
        above.insert(0, lines[row - 1].strip().lstrip("#").strip())
        row -= 1
    own = ""
    try:  # the line alone (a field spanning lines leaves a bracket open: the comment comes first)
        for tok in tokenize.generate_tokens(io.StringIO(lines[lineno - 1].strip() + "\n").readline):
            if tok.type == tokenize.COMMENT:
                own = tok.string.lstrip("#").strip()
                break
    except tokenize.TokenError:
        pass
    if own.startswith(LINT_COMMENTS):
        own = ""
    return "; ".join(part for part in (" ".join(above), own) if part)
