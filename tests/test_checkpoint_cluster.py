"""Checkpoints for real clusters (issue 11): fsspec paths, torch.save checkpoints read safely,
async saves, Burn's per-epoch layout, preemption."""

from __future__ import annotations

import concurrent.futures
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings
from pathlib import Path

import fsspec
import lightning as L
import msgpack
import pytest
import torch
from idx import write_mnist_idx
from lightning.pytorch.plugins.io import AsyncCheckpointIO
from toy import Classifier, loader

from burnlike.optim import AdamConfig
from burnlike.record import (
    DefaultRecorder,
    NamedMpkFileRecorder,
    RecorderCheckpointIO,
    RecordError,
    load_checkpoint,
)
from burnlike.record.format.location import RemotePath
from burnlike.train import LearnerBuilder
from burnlike.train.checkpoint import KeepLastNCheckpoints
from burnlike.train.metric import LossMetric
from burnlike.train.module import StepModule

HERE = Path(__file__).parent


def builder(root: str | Path, epochs: int, keep: int = 3) -> LearnerBuilder:
    return (LearnerBuilder(root).metric_valid_numeric(LossMetric()).with_file_checkpointer(DefaultRecorder())
            .with_checkpointing_strategy(KeepLastNCheckpoints(keep)).num_epochs(epochs).progress_bar(False))


def fit(b: LearnerBuilder) -> torch.nn.Module:
    torch.manual_seed(0)
    return b.build(Classifier(), AdamConfig(), 1e-2).fit(loader(64, 16), loader(32, 16, seed=1)).model


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def burnlike_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("burnlike")]


# 1. fsspec -----------------------------------------------------------------------------------------
def test_two_epochs_on_a_memory_filesystem_then_resume_from_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a mangled URL would show up here as a local folder "memory:"
    root = f"memory://run-{uuid.uuid4().hex}"
    fit(builder(root, 2))
    fs = fsspec.filesystem("memory")
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(root.removeprefix("memory://") + "/checkpoint", detail=False))
    assert names == [f"{k}-{e}.mpk" for k in ("model", "optim", "scheduler", "trainer") for e in (1, 2)]
    assert not list(tmp_path.iterdir())

    resumed = fit(builder(root, 3).checkpoint(2))
    assert fs.exists(root + "/checkpoint/trainer-3.mpk")
    assert load_checkpoint(f"{root}/checkpoint/trainer-3.mpk")["global_step"] == 12  # 4 steps × 3 epochs
    model = Classifier().load_file(f"{root}/checkpoint/model-3.mpk")
    assert same_weights(model, resumed)
    assert same_weights(resumed, fit(builder(tmp_path / "straight", 3)))
    assert not (tmp_path / "memory:").exists()


def test_plugin_paths_and_storage_options_go_to_fsspec():
    root = f"memory://io-{uuid.uuid4().hex}"
    io = RecorderCheckpointIO(DefaultRecorder())
    ckpt = {"state_dict": Classifier().state_dict(), "pytorch-lightning_version": "2.6", "epoch": 0}
    io.save_checkpoint(ckpt, f"{root}/a/b.ckpt", storage_options={"skip_instance_cache": True})
    assert io.load_checkpoint(f"{root}/a/b.ckpt")["epoch"] == 0
    io.remove_checkpoint(f"{root}/a/b.ckpt")
    with pytest.raises(FileNotFoundError, match=f"^Checkpoint file not found: {root}/a/b.ckpt$"):
        io.load_checkpoint(f"{root}/a/b.ckpt")
    assert RemotePath(f"{root}/a/b.ckpt").parent.name == "a"


# 2. torch.save checkpoints -------------------------------------------------------------------------
def test_a_torch_saved_lightning_checkpoint_resumes_through_the_plugin(tmp_path):
    torch.manual_seed(0)
    first = LearnerBuilder(tmp_path / "torch").num_epochs(1).progress_bar(False).build(Classifier(), AdamConfig(), 1e-2)
    first.fit(loader(64, 16))
    first.trainer.save_checkpoint(tmp_path / "torch.ckpt")  # Lightning's own TorchCheckpointIO
    assert (tmp_path / "torch.ckpt").read_bytes()[:4] == b"PK\x03\x04"

    model = Classifier()
    io = RecorderCheckpointIO(DefaultRecorder())
    trainer = L.Trainer(max_epochs=2, plugins=[io], logger=False, enable_progress_bar=False,
                        enable_model_summary=False, enable_checkpointing=False, default_root_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(StepModule(model, AdamConfig(), 1e-2), loader(64, 16), ckpt_path=tmp_path / "torch.ckpt")
    said = [str(w.message) for w in caught if "torch.save checkpoint" in str(w.message)]
    assert len(said) == 1 and "next save uses the recorder's format" in said[0]
    assert trainer.global_step == 8  # epoch 1 from the file, epoch 2 trained here
    trainer.save_checkpoint(tmp_path / "next.ckpt")
    assert (tmp_path / "next.ckpt").read_bytes()[:1] == b"\x83"  # the recorder's format (MessagePack)


class Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


@pytest.mark.parametrize("how", ["pickle", "torch.save"])
def test_a_pickle_that_would_run_code_is_refused_and_never_unpickled(tmp_path, how):
    marker = tmp_path / "pwned"
    evil = {"state_dict": {"w": Evil(marker)}, "pytorch-lightning_version": "2.6"}
    path = tmp_path / "innocent.ckpt"
    if how == "pickle":
        path.write_bytes(pickle.dumps(evil, protocol=2))
    else:
        torch.save(evil, path)
    with pytest.raises(RecordError, match="burnlike convert") as e:
        RecorderCheckpointIO(DefaultRecorder()).load_checkpoint(path)
    assert str(path) in str(e.value)
    with pytest.raises(RecordError):
        load_checkpoint(path)
    assert not marker.exists()


def test_no_thread_outlives_a_save_and_lightnings_async_wrapper_works(tmp_path):
    io = RecorderCheckpointIO(DefaultRecorder())
    ckpt = {"state_dict": Classifier().state_dict(), "pytorch-lightning_version": "2.6"}
    io.save_checkpoint(ckpt, tmp_path / "a.ckpt")
    io.save_checkpoint(ckpt, tmp_path / "a.ckpt")  # replaces a file
    assert burnlike_threads() == []

    # Every epoch's checkpoint is kept: Lightning's AsyncCheckpointIO doesn't override
    # remove_checkpoint, so its top-1 removal of epoch 0's file can run before its queued write
    # (then two files remain: Lightning's race, seen on a loaded machine; burnlike's own async
    # mode waits for pending writes before a removal).
    keep_all = L.pytorch.callbacks.ModelCheckpoint(dirpath=tmp_path / "checkpoints", save_top_k=-1)
    trainer = L.Trainer(max_epochs=2, plugins=[AsyncCheckpointIO(RecorderCheckpointIO(DefaultRecorder()))],
                        logger=False, enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=tmp_path, callbacks=[keep_all])
    torch.manual_seed(0)
    module = StepModule(Classifier(), AdamConfig(), 1e-2)
    trainer.fit(module, loader(64, 16))
    saved = {p.name: p for p in (tmp_path / "checkpoints").glob("*.ckpt")}
    assert sorted(saved) == ["epoch=0-step=4.ckpt", "epoch=1-step=8.ckpt"]
    assert load_checkpoint(saved["epoch=0-step=4.ckpt"])["global_step"] == 4
    saved = saved["epoch=1-step=8.ckpt"]
    assert load_checkpoint(saved)["global_step"] == 8
    assert same_weights(Classifier().load_file(saved), module.model)
    assert burnlike_threads() == []


# 3. async saves --------------------------------------------------------------------------------------
class GatedRecorder(NamedMpkFileRecorder):
    """Holds each write until the test opens the gate: the write provably runs after the weights moved."""

    def __init__(self) -> None:
        super().__init__(None)
        self.gate = threading.Event()
        self.gate.set()

    def encode(self, record, module, f) -> None:  # noqa: ANN001
        assert self.gate.wait(60)
        super().encode(record, module, f)


class SaveThenMutate(L.Callback):
    def __init__(self, io: RecorderCheckpointIO, at: int, folder: Path) -> None:
        self.io, self.at, self.folder = io, at, folder

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:  # noqa: ANN001
        if trainer.global_step != self.at:
            return
        self.io.async_save = False
        trainer.save_checkpoint(self.folder / "sync.ckpt")
        self.io.async_save = True
        self.io.recorder.gate.clear()
        trainer.save_checkpoint(self.folder / "async.ckpt")
        assert not (self.folder / "async.ckpt").exists()  # the write waits off the training thread
        with torch.no_grad():
            for p in pl_module.parameters():
                p.add_(1.0)  # training goes on and changes the weights in place
        for state in trainer.optimizers[0].state.values():
            state["exp_avg"].add_(1.0)
        self.io.recorder.gate.set()


def test_an_async_save_equals_the_synchronous_checkpoint_of_its_step(tmp_path):
    io = RecorderCheckpointIO(GatedRecorder(), async_save=True)
    trainer = L.Trainer(max_epochs=1, plugins=[io], logger=False, enable_progress_bar=False,
                        enable_model_summary=False, enable_checkpointing=False, default_root_dir=tmp_path,
                        callbacks=[SaveThenMutate(io, 2, tmp_path)])
    trainer.fit(StepModule(Classifier(), AdamConfig(), 1e-2), loader(64, 16))
    assert burnlike_threads() == []  # teardown joined the writer
    assert (tmp_path / "async.ckpt").read_bytes() == (tmp_path / "sync.ckpt").read_bytes()


def test_an_async_write_error_surfaces_at_the_next_save_and_at_teardown(tmp_path):
    io = RecorderCheckpointIO(DefaultRecorder(), async_save=True)
    ckpt = {"state_dict": Classifier().state_dict(), "pytorch-lightning_version": "2.6"}
    (tmp_path / "file").write_text("")
    io.save_checkpoint(ckpt, tmp_path / "file" / "x.ckpt")  # its folder is a file: the write fails
    with pytest.raises(OSError):
        io.teardown()  # waits for the write, raises its error
    assert burnlike_threads() == []
    io.save_checkpoint(ckpt, tmp_path / "file" / "x.ckpt")
    concurrent.futures.wait(io._pending)  # the failed write has finished
    with pytest.raises(OSError):
        io.save_checkpoint(ckpt, tmp_path / "ok.ckpt")
    io.teardown()
    assert burnlike_threads() == []


@pytest.mark.slow
def test_sigkill_during_an_async_write_leaves_the_previous_checkpoint(tmp_path):
    path = tmp_path / "ck.ckpt"
    proc = subprocess.Popen([sys.executable, str(HERE / "async_kill_save.py"), str(path)], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    try:
        assert proc.stdout.readline().strip() == "saved"
        before = path.read_bytes()
        assert proc.stdout.readline().strip() == "writing"  # the second save is half written
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
    finally:
        proc.kill()
    assert path.read_bytes() == before
    assert load_checkpoint(path)["global_step"] == 1


# 4. Burn's per-epoch layout --------------------------------------------------------------------------
def test_model_n_is_a_plain_burn_module_record_and_resume_matches_an_uninterrupted_run(tmp_path):
    straight = fit(builder(tmp_path / "straight", 3, keep=1))
    kept = sorted(p.name for p in (tmp_path / "straight" / "checkpoint").iterdir())
    assert kept == ["model-3.mpk", "optim-3.mpk", "scheduler-3.mpk", "trainer-3.mpk"]  # delete took all of 1, 2

    fit(builder(tmp_path / "cut", 2))
    record = msgpack.unpackb((tmp_path / "cut" / "checkpoint" / "model-2.mpk").read_bytes(), raw=False)
    assert list(record) == ["metadata", "item", "_b"]
    assert "NamedMpkFileRecorder" in record["metadata"]["format"]
    weight = record["item"]["linear"]["weight"]
    assert list(record["item"]) == ["linear"] and list(weight) == ["id", "param"] and len(weight["id"]) == 13
    assert weight["param"]["shape"] == [4, 3] and weight["param"]["dtype"] == "F32"  # Linear stored [d_in, d_out]
    Classifier().load_file(tmp_path / "cut" / "checkpoint" / "model-2.mpk", DefaultRecorder())
    resumed = fit(builder(tmp_path / "cut", 3).checkpoint(2))
    assert same_weights(resumed, straight)
    assert same_weights(Classifier().load_file(tmp_path / "cut" / "checkpoint" / "model-3.mpk"), straight)


def test_an_epoch_checkpoint_supersedes_the_preempted_ones_before_it(tmp_path):
    """A preempted-S file is only needed until a complete checkpoint of a later step exists: then
    it is removed (else every preemption of a long run leaves one behind); a later one stays."""
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    for name in ("preempted-2.mpk", "preempted-4.mpk", "preempted-99999.mpk", "preempted-x.mpk", "preempted-3.json"):
        (folder / name).write_bytes(b"not read: removal goes by the step in the name")
    fit(builder(tmp_path, 1))  # one epoch of 4 steps (64 samples, batch 16)
    left = sorted(p.name for p in folder.iterdir() if p.name.startswith("preempted"))
    assert left == ["preempted-3.json", "preempted-99999.mpk", "preempted-x.mpk"]


def test_an_old_single_file_checkpoint_still_resumes(tmp_path):
    straight = fit(builder(tmp_path / "straight", 3))
    torch.manual_seed(0)
    learner = builder(tmp_path / "run", 2).build(Classifier(), AdamConfig(), 1e-2)
    learner.fit(loader(64, 16), loader(32, 16, seed=1))
    old = tmp_path / "old" / "checkpoint" / "model-2.mpk"
    learner.trainer.save_checkpoint(old)  # what FileCheckpointer wrote before: the whole Lightning dict
    assert "optimizer_states" in load_checkpoint(old)
    assert same_weights(fit(builder(tmp_path / "old", 3).checkpoint(2)), straight)


# 5. preemption ---------------------------------------------------------------------------------------
ROOT = HERE.parent


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=512, n_test=64)


# Many short epochs: the signal must land while the run still trains. With 4 epochs, a loaded CI
# machine once let the run finish its last three (~0.1 s of work) before the poll below woke up.
EPOCHS = 30


def app(args: list[str], run: Path, tiny: Path) -> list[str]:
    return [sys.executable, str(ROOT / "train.py"), "model=mlp", "learner.recorder=default", f"learner.num_epochs={EPOCHS}",
            "learner.progress_bar=false", f"hydra.run.dir={run}", *args]


def env(tiny: Path) -> dict[str, str]:
    return {**os.environ, "BURNLIKE_DATA": str(tiny), "PYTHONWARNINGS": "ignore"}


def params(path: Path) -> dict[str, bytes]:
    """Every parameter's bytes in a module record, by key (ParamIds differ between runs)."""
    out: dict[str, bytes] = {}

    def walk(node: object, key: str) -> None:
        if isinstance(node, dict) and set(node) == {"id", "param"}:
            out[key] = node["param"]["bytes"]
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{key}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{key}.{i}")

    walk(msgpack.unpackb(path.read_bytes(), raw=False)["item"], "")
    return out


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_sigterm_saves_at_the_next_step_and_last_resumes_to_the_uninterrupted_weights(tmp_path, tiny):
    run = tmp_path / "cut"
    proc = subprocess.Popen(app([], run, tiny), cwd=ROOT, env=env(tiny), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        epoch_one = run / "checkpoint" / "trainer-1.mpk"
        for _ in range(60_000):  # bounded poll on the file the run writes after its first epoch
            if epoch_one.exists() or proc.poll() is not None:
                break
            time.sleep(0.005)
        assert epoch_one.exists(), "the run never finished its first epoch"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, f"stdout: {out[-2000:]}\nstderr: {err[-3000:]}"
    lines = [line for line in err.splitlines() if "preempted by SIGTERM" in line]
    assert len(lines) == 1 and "checkpoint('last')" in lines[0]
    [saved] = (run / "checkpoint").glob("preempted-*.mpk")
    checkpoint = load_checkpoint(saved)
    assert checkpoint["global_step"] > load_checkpoint(epoch_one)["global_step"]  # saved after the signal
    assert checkpoint["global_step"] == int(saved.stem.split("-")[1])
    assert not (run / "checkpoint" / f"trainer-{EPOCHS}.mpk").exists() and not (run / "model.mpk").exists()

    resumed = subprocess.run(app(["learner.checkpoint=last"], run, tiny), cwd=ROOT, env=env(tiny),
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from {saved}" in (run / "experiment.log").read_text()
    straight = subprocess.run(app([], tmp_path / "straight", tiny), cwd=ROOT, env=env(tiny), capture_output=True,
                              text=True, timeout=300)
    assert straight.returncode == 0, straight.stderr[-3000:]
    assert params(run / "model.mpk") == params(tmp_path / "straight" / "model.mpk")
    assert not list((run / "checkpoint").glob("preempted-*"))  # superseded by the resumed run's epochs
