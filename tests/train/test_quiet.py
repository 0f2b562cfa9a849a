"""`burnlike.train.quiet`: `DropMessages` filters out the log records containing any of its texts
(Lightning's tips and adverts) and lets every other record through."""

from __future__ import annotations

import logging

from burnlike.train.quiet import DropMessages


def record(message):
    return logging.LogRecord("lightning", logging.INFO, __file__, 1, message, None, None)


def test_drop_messages_drops_only_records_containing_its_texts():
    drop = DropMessages(("tip: use", "noise"))
    assert drop.filter(record("a tip: use more workers")) is False
    assert drop.filter(record("some noise here")) is False
    assert drop.filter(record("Epoch 1 done")) is True
