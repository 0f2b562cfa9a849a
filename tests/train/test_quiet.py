"""`burnlike.train.quiet`: `DropMessages` filters out the log records containing any of its texts
(Lightning's tips and adverts) and lets every other record through; `resuming_exactly` drops
Lightning's "dataloader is not resumable" warning within a fit whose loader resumes exactly."""

from __future__ import annotations

import logging
import warnings

from lightning.pytorch.utilities.warnings import PossibleUserWarning

from burnlike.train.quiet import DropMessages, resuming_exactly


def record(message):
    return logging.LogRecord("lightning", logging.INFO, __file__, 1, message, None, None)


def test_drop_messages_drops_only_records_containing_its_texts():
    drop = DropMessages(("tip: use", "noise"))
    assert drop.filter(record("a tip: use more workers")) is False
    assert drop.filter(record("some noise here")) is False
    assert drop.filter(record("Epoch 1 done")) is True


NOT_RESUMABLE_TEXT = ("You're resuming from a checkpoint that ended before the epoch ended and your dataloader is not "
                      "resumable. This can cause unreliable results if further training is done.")


def warned(text):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with resuming_exactly(True):
            warnings.warn(text, PossibleUserWarning, stacklevel=1)
        warnings.warn(text, PossibleUserWarning, stacklevel=1)  # after the block: shown again
    return [str(w.message) for w in caught]


def test_an_exact_resume_drops_only_lightnings_not_resumable_warning_and_only_within():
    assert warned(NOT_RESUMABLE_TEXT) == [NOT_RESUMABLE_TEXT]
    assert warned("another warning") == ["another warning", "another warning"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with resuming_exactly(False):
            warnings.warn(NOT_RESUMABLE_TEXT, PossibleUserWarning, stacklevel=1)
    assert len(caught) == 1
