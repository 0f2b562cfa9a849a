"""`burnlike.record.checkpoint.plugin`: `RecorderCheckpointIO`, Lightning's CheckpointIO writing
Burn records, and `load_lightning_module`/`load_from_checkpoint`. Real fits resume from its
checkpoints exactly as an uninterrupted run (full precision; compact ones keep optimizer state
full), from Lightning's own torch.save checkpoints too; paths may be fsspec URLs; async saves
write the step's values even as training changes the weights, surface their errors, and leave
no thread behind. Loading a module passes map_location and strict on, and asks for
hyperparameters that couldn't be stored as keyword arguments."""

from __future__ import annotations

import concurrent.futures
import functools
import threading
import uuid
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins.io import AsyncCheckpointIO
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from burnlike.optim import AdamConfig
from burnlike.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    RecorderCheckpointIO,
    RecordError,
    load_checkpoint,
    load_from_checkpoint,
    load_lightning_module,
)
from burnlike.record.format.location import RemotePath
from burnlike.train import LearnerBuilder
from burnlike.train.module import StepModule
from tests.helpers.fit import same_weights
from tests.helpers.toy import Classifier, loader
from tests.record.helpers import burnlike_threads


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
    """At step `at`: a synchronous save, then an async one held at the gate while the weights and
    the optimizer state change in place, then the gate opens."""

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


class Pair(L.LightningModule):
    """A Linear of `width` inputs, `width` saved as its one hyperparameter."""

    def __init__(self, width: int = 2) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Linear(width, 2)


def pair_checkpoint(path: Path, recorder: Any = None, drop: str | None = None, **extra: Any) -> Path:
    """A checkpoint of a seeded `Pair`, without the entry `drop`, with `extra` keys."""
    torch.manual_seed(0)
    src = Pair()
    state = {k: v for k, v in src.state_dict().items() if k != drop}
    ckpt = {"state_dict": state, "pytorch-lightning_version": L.__version__, "hyper_parameters": {"width": 2}}
    RecorderCheckpointIO(recorder or DefaultRecorder()).save_checkpoint(ckpt | extra, path)
    return path


class BatchNormClassifier(L.LightningModule):
    """A small MLP with a BatchNorm (an int64 counter among its buffers), trained with Adam."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def batches() -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    return DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=16, shuffle=False)


def checkpointing_trainer(tmp: Path, epochs: int, recorder: object, top_k: int = -1) -> L.Trainer:
    """A CPU Trainer saving a checkpoint every epoch through the plugin, keeping all or the top k."""
    ckpt = ModelCheckpoint(dirpath=tmp, save_top_k=top_k, every_n_epochs=1, monitor="epoch" if top_k > 0 else None,
                           mode="max")
    return L.Trainer(max_epochs=epochs, plugins=[RecorderCheckpointIO(recorder)], callbacks=[ckpt], logger=False,
                     enable_progress_bar=False, enable_model_summary=False, deterministic=True,
                     accelerator="cpu", devices=1)


def fit(tmp: Path, epochs: int, recorder: object, ckpt_path: Path | None = None, top_k: int = -1) -> BatchNormClassifier:
    """A seeded `BatchNormClassifier` fitted for `epochs`, checkpointed into `tmp`."""
    torch.manual_seed(0)
    model = BatchNormClassifier()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's "few workers" hints
        checkpointing_trainer(tmp, epochs, recorder, top_k).fit(model, batches(), ckpt_path=ckpt_path)
    return model


class WithNet(L.LightningModule):
    """The lightning-hydra-template pattern: an nn.Module in the hyperparameters."""

    def __init__(self, net: nn.Module, lr: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = net


# --- saving and resuming through the plugin ---


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


@pytest.mark.timeout(180)
def test_full_precision_resume_equals_an_uninterrupted_run_and_loads_back_the_module(tmp_path):
    straight = fit(tmp_path / "a", 4, DefaultRecorder())
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [f"epoch={e}-step={4 * (e + 1)}.ckpt" for e in range(4)]
    fit(tmp_path / "b", 2, DefaultRecorder())
    resumed = fit(tmp_path / "b", 4, DefaultRecorder(), ckpt_path=tmp_path / "b" / "epoch=1-step=8.ckpt")
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    back = load_lightning_module(BatchNormClassifier, tmp_path / "a" / "epoch=3-step=16.ckpt")
    assert isinstance(back, BatchNormClassifier) and back.hparams.hidden == 16
    assert all(torch.equal(a, b) for a, b in zip(straight.state_dict().values(), back.state_dict().values()))


@pytest.mark.timeout(180)
def test_compact_checkpoints_resume_and_keep_optimizer_state_full_precision(tmp_path):
    fit(tmp_path, 2, CompactRecorder(), top_k=1)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["epoch=1-step=8.ckpt"]  # top-k removal went through remove_checkpoint
    ckpt = load_checkpoint(tmp_path / files[0], CompactRecorder())
    assert ckpt["state_dict"]["net.0.weight"].dtype == torch.float16
    assert ckpt["state_dict"]["net.1.num_batches_tracked"].dtype == torch.int64
    state = ckpt["optimizer_states"][0]["state"]
    assert list(state) == list(range(6)) and state[0]["exp_avg_sq"].dtype == torch.float32
    assert state[0]["step"].dtype == torch.float32 and ckpt["optimizer_states"][0]["param_groups"][0]["betas"] == (0.9, 0.999)
    resumed = fit(tmp_path, 3, CompactRecorder(), ckpt_path=tmp_path / files[0], top_k=1)
    assert resumed.trainer.current_epoch == 3 and (tmp_path / "epoch=2-step=12.ckpt").exists()


def test_gz_checkpoints_load_with_map_location_and_are_told_by_their_bytes(tmp_path):
    fit(tmp_path, 1, NamedMpkGzFileRecorder())
    path = tmp_path / "epoch=0-step=4.ckpt"
    io = RecorderCheckpointIO(NamedMpkGzFileRecorder())
    ckpt = io.load_checkpoint(path, map_location="cpu", weights_only=True)
    assert ckpt["pytorch-lightning_version"] and ckpt["state_dict"]["net.0.weight"].device.type == "cpu"
    moved = io.load_checkpoint(path, map_location=lambda t, _: t.double())
    assert moved["state_dict"]["net.0.weight"].dtype == torch.float64
    assert load_checkpoint(path)["epoch"] == 0  # the format is sniffed: Lightning names every file .ckpt


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


# --- async saves and threads ---


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


# --- loading a LightningModule ---


def test_load_lightning_module_reads_with_the_recorder_given(tmp_path):
    path = pair_checkpoint(tmp_path / "last.mpk", BinFileRecorder())  # bincode under a MessagePack name
    assert load_lightning_module(Pair, path, recorder=BinFileRecorder()).net.weight.shape == (2, 2)


@pytest.mark.parametrize("load", [load_lightning_module, load_from_checkpoint])
def test_map_location_and_strict_reach_the_loaded_module(tmp_path, load):
    path = pair_checkpoint(tmp_path / "last.ckpt")
    sevens = load(Pair, path, map_location=lambda t, _: torch.full_like(t, 7.0))
    assert torch.equal(sevens.net.weight, torch.full((2, 2), 7.0))
    partial = pair_checkpoint(tmp_path / "partial.ckpt", drop="net.bias")
    with pytest.raises(RuntimeError, match="net.bias"):
        load(Pair, partial)
    with pytest.warns(UserWarning, match="not in the checkpoint: \\['net.bias'\\]"):
        loose = load(Pair, partial, strict=False)
    assert torch.equal(loose.net.weight, load(Pair, path).net.weight)


def test_hyperparameters_stored_as_pairs_load(tmp_path):
    path = pair_checkpoint(tmp_path / "last.ckpt", hyper_parameters=[["width", 2]])  # Lightning updates from pairs
    assert load_lightning_module(Pair, path).hparams.width == 2


@pytest.mark.parametrize("cls", [WithNet, functools.partial(WithNet)])
def test_an_unstorable_hparam_error_names_file_key_and_the_call_to_make(tmp_path, cls):
    path = tmp_path / "last.ckpt"
    with pytest.warns(UserWarning, match="hyper_parameters.net"):
        RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
            {"state_dict": WithNet(nn.Linear(3, 2)).state_dict(), "hyper_parameters": {"net": nn.Linear(3, 2)},
             "pytorch-lightning_version": L.__version__}, path)
    with pytest.raises(RecordError) as e:
        load_lightning_module(cls, path)
    name = "WithNet" if cls is WithNet else cls
    assert str(e.value) == (f"{path}: at 'hyper_parameters.net': hyperparameters ['net'] were not storable "
                            "without pickle; pass them as keyword arguments: "
                            f"load_lightning_module({name}, path, net=...)")
    assert (e.value.path, e.value.key) == (str(path), "hyper_parameters.net")


def test_load_from_checkpoint_asks_for_unstorable_hparams_as_keyword_arguments(tmp_path):
    module = WithNet(nn.Linear(3, 2))
    path = tmp_path / "last.ckpt"
    with pytest.warns(UserWarning, match="hyper_parameters.net"):
        RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
            {"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams),
             "pytorch-lightning_version": L.__version__}, path)
    with pytest.raises(RecordError, match="net=..."):
        load_from_checkpoint(WithNet, path)
    back = load_from_checkpoint(WithNet, path, net=nn.Linear(3, 2))
    assert back.hparams.lr == 0.1 and torch.equal(back.net.weight, module.net.weight)
