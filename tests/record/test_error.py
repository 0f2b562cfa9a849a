"""`burnlike.record.error`: `RecordError`'s message (`path: at 'key': text`, each part only when
known) and `quote`, which cuts untrusted content past `QUOTE_CHARS` and says how long it was, so a
hostile file can't make an error message megabytes long."""

from __future__ import annotations

from burnlike.record.error import QUOTE_CHARS, RecordError, quote


def test_a_record_error_without_a_file_is_just_its_message():
    e = RecordError("bad")
    assert (str(e), e.path, e.key) == ("bad", None, None)
    assert str(RecordError("bad", "f.mpk")) == "f.mpk: bad"


def test_quote_cuts_only_past_its_limit():
    exact = "x" * (QUOTE_CHARS - 2)  # its repr is QUOTE_CHARS characters
    assert quote(exact) == repr(exact)
    over = exact + "x"
    assert quote(over) == f"{repr(over)[:QUOTE_CHARS]}… ({QUOTE_CHARS + 1} characters)"


def test_a_record_error_cuts_a_key_only_past_the_quote_limit():
    assert RecordError("bad", None, "k" * QUOTE_CHARS).key == "k" * QUOTE_CHARS
    long = RecordError("bad", None, "k" * (QUOTE_CHARS + 1))
    assert long.key == f"{'k' * QUOTE_CHARS}… ({QUOTE_CHARS + 1} characters)"
    assert str(long) == f"at '{long.key}': bad"
