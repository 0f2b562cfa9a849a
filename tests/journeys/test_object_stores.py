"""Runs whose artifact dir is an fsspec URL (`memory://` here, as `s3://` on a cluster): the epoch
checkpoints go to the store and nowhere on the local disk (a URL mangled into a path would leave a
local folder such as `memory:`), and a resume from the store matches an uninterrupted run."""

from __future__ import annotations

import uuid

import fsspec

from burnlike.record import load_checkpoint
from tests.helpers.fit import checkpointing_builder, fit, same_weights
from tests.helpers.toy import Classifier


def test_a_run_on_a_memory_filesystem_keeps_its_epoch_files_there_and_resumes_from_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a mangled URL would show up here as a local folder "memory:"
    root = f"memory://run-{uuid.uuid4().hex}"
    fit(checkpointing_builder(root, 2))
    fs = fsspec.filesystem("memory")
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(root.removeprefix("memory://") + "/checkpoint", detail=False))
    assert names == [f"{k}-{e}.mpk" for k in ("model", "optim", "scheduler", "trainer") for e in (1, 2)]
    assert not list(tmp_path.iterdir())

    resumed = fit(checkpointing_builder(root, 3).checkpoint(2))
    assert fs.exists(root + "/checkpoint/trainer-3.mpk")
    assert load_checkpoint(f"{root}/checkpoint/trainer-3.mpk")["global_step"] == 12  # 4 steps × 3 epochs
    model = Classifier().load_file(f"{root}/checkpoint/model-3.mpk")
    assert same_weights(model, resumed)
    assert same_weights(resumed, fit(checkpointing_builder(tmp_path / "straight", 3)))
    assert not (tmp_path / "memory:").exists()
