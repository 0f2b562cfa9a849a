"""RecorderCheckpointIO inside a real `lightning.Trainer`: save, resume, load_from_checkpoint."""

from __future__ import annotations

import warnings
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from burnlike.record import (
    CompactRecorder,
    DefaultRecorder,
    NamedMpkGzFileRecorder,
    RecorderCheckpointIO,
    load_checkpoint,
    load_lightning_module,
)


class Tiny(L.LightningModule):
    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], _: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def data() -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    return DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=16, shuffle=False)


def trainer(tmp: Path, epochs: int, recorder: object, top_k: int = -1) -> L.Trainer:
    ckpt = ModelCheckpoint(dirpath=tmp, save_top_k=top_k, every_n_epochs=1, monitor="epoch" if top_k > 0 else None,
                           mode="max")
    return L.Trainer(max_epochs=epochs, plugins=[RecorderCheckpointIO(recorder)], callbacks=[ckpt], logger=False,
                     enable_progress_bar=False, enable_model_summary=False, deterministic=True,
                     accelerator="cpu", devices=1)


def fit(tmp: Path, epochs: int, recorder: object, ckpt_path: Path | None = None, top_k: int = -1) -> Tiny:
    torch.manual_seed(0)
    model = Tiny()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's "few workers" hints
        trainer(tmp, epochs, recorder, top_k).fit(model, data(), ckpt_path=ckpt_path)
    return model


@pytest.mark.timeout(180)
def test_full_precision_resume_equals_an_uninterrupted_run(tmp_path):
    straight = fit(tmp_path / "a", 4, DefaultRecorder())
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [f"epoch={e}-step={4 * (e + 1)}.ckpt" for e in range(4)]
    fit(tmp_path / "b", 2, DefaultRecorder())
    resumed = fit(tmp_path / "b", 4, DefaultRecorder(), ckpt_path=tmp_path / "b" / "epoch=1-step=8.ckpt")
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    back = load_lightning_module(Tiny, tmp_path / "a" / "epoch=3-step=16.ckpt")
    assert isinstance(back, Tiny) and back.hparams.hidden == 16
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


def test_gz_recorder_and_map_location(tmp_path):
    fit(tmp_path, 1, NamedMpkGzFileRecorder())
    path = tmp_path / "epoch=0-step=4.ckpt"
    io = RecorderCheckpointIO(NamedMpkGzFileRecorder())
    ckpt = io.load_checkpoint(path, map_location="cpu", weights_only=True)
    assert ckpt["pytorch-lightning_version"] and ckpt["state_dict"]["net.0.weight"].device.type == "cpu"
    moved = io.load_checkpoint(path, map_location=lambda t, _: t.double())
    assert moved["state_dict"]["net.0.weight"].dtype == torch.float64
    assert load_checkpoint(path)["epoch"] == 0  # the format is sniffed: Lightning names every file .ckpt


class WithNet(L.LightningModule):
    """The lightning-hydra-template pattern: an nn.Module in the hyperparameters."""

    def __init__(self, net: nn.Module, lr: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = net


def test_load_from_checkpoint_with_an_unstorable_hparam(tmp_path):
    from burnlike.record import RecordError, load_from_checkpoint

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
