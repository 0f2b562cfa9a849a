"""`burnlike.train.renderer.display`: the plain progress lines. Each pass's pace names its split."""

from __future__ import annotations

import io

from burnlike.optim import AdamConfig
from burnlike.train.renderer.display import PlainProgress
from tests.helpers.toy import Classifier, loader
from tests.train.helpers import silent_builder


def test_plain_progress_paces_name_their_split(tmp_path):
    plain = PlainProgress(interval=0.0, stream=io.StringIO())
    (silent_builder(tmp_path).progress_bar(True).callback(plain).build(Classifier(), AdamConfig(), 1e-2)
     .fit(loader(32, 16), loader(16, 16)))
    assert {name: pace.split for name, pace in plain.paces.items()} == {"train": "train", "valid": "valid"}
