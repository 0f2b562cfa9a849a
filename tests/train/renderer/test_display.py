"""`burnlike.train.renderer.display`: the plain progress lines. Each pass's pace names its split,
`split` is the pass under way, and a stored epoch of a split it counted no batches of is no line."""

from __future__ import annotations

import io

import lightning as L

from burnlike.optim import AdamConfig
from burnlike.train.metric.store import EpochEntry, Split
from burnlike.train.renderer.display import PlainProgress
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import silent_builder


def test_plain_progress_paces_name_their_split(tmp_path):
    plain = PlainProgress(interval=0.0, stream=io.StringIO())
    (silent_builder(tmp_path).progress_bar(True).callback(plain).build(Classifier(), AdamConfig(), 1e-2)
     .fit(loader(32, 16), loader(16, 16)))
    assert {name: pace.split for name, pace in plain.paces.items()} == {"train": "train", "valid": "valid"}


class SplitSeen(L.Callback):
    """The display's `split` at each batch's start, by the loop it is in."""

    def __init__(self, plain: PlainProgress) -> None:
        self.plain = plain
        self.seen: dict[str, set[str]] = {"train": set(), "valid": set()}

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch: object,
                             batch_idx: int) -> None:
        self.seen["train"].add(self.plain.split)

    def on_validation_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch: object,
                                  batch_idx: int, dataloader_idx: int = 0) -> None:
        if not trainer.sanity_checking:
            self.seen["valid"].add(self.plain.split)


def test_plain_progress_split_is_the_pass_under_way(tmp_path):
    plain = PlainProgress(interval=0.0, stream=io.StringIO())
    seen = SplitSeen(plain)
    (silent_builder(tmp_path, epochs=2).progress_bar(True).callback(plain).callback(seen)
     .build(Classifier(), AdamConfig(), 1e-2).fit(loader(32, 16), loader(16, 16)))
    assert seen.seen == {"train": {"train"}, "valid": {"valid"}}


def test_plain_progress_writes_no_line_for_an_epoch_of_a_split_it_counted_no_batches_of(tmp_path):
    """A stored test epoch (a split it doesn't pace) and a train epoch stored before any of its
    batches (nothing to report a pace of) write nothing, and don't fail the run."""
    stream = io.StringIO()
    plain = PlainProgress(interval=0.0, stream=stream)
    learner = silent_builder(tmp_path).build(Classifier(), AdamConfig(), 1e-2)
    plain.setup(learner.trainer, learner.module, "fit")
    for split in (Split.TEST, Split.TRAIN):
        learner.module.store.end_epoch(split, 1, {"Loss": EpochEntry(0.5)})
    assert stream.getvalue() == ""
