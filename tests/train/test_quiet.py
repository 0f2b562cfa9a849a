"""TODO: docstring."""

from __future__ import annotations

import logging

from burnlike.train.quiet import DropMessages


def test_drop_messages_drops_only_records_containing_its_texts():
    drop = DropMessages(("advert",))

    def record(msg):
        return logging.LogRecord("x", logging.INFO, __file__, 1, msg, None, None)

    assert drop.filter(record("an advert here")) is False
    assert drop.filter(record("a real problem")) is True


def test_drop_messages_filters_records_containing_its_texts():
    drop = DropMessages(("tip: use", "noise"))

    def record(message):
        return logging.LogRecord("lightning", logging.INFO, __file__, 1, message, None, None)

    assert not drop.filter(record("a tip: use more workers"))
    assert not drop.filter(record("some noise here"))
    assert drop.filter(record("Epoch 1 done"))
