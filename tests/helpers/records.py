"""Modules and records that the record, CLI and architecture tests share, and Burn's own files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from burnlike.module import Module
from burnlike.record import DefaultRecorder, RecorderCheckpointIO
from burnlike.record.format.files import temp_prefix
from tests.helpers.paths import SHARED_DATA


class Block(Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.norm = nn.BatchNorm2d(4)
        self.act = nn.ReLU()


class Net(Module):
    """A network with every kind of record entry: embedding, conv, batch norm (buffers), a module list,
    a bias-free linear layer and a parameter-free dropout."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.block = Block()
        self.layers = nn.ModuleList([nn.Linear(4, 5), nn.LayerNorm(5), nn.Linear(5, 2, bias=False)])
        self.dropout = nn.Dropout(0.1)


def randomised(net: nn.Module) -> nn.Module:
    """`net` with every parameter and float buffer drawn at random (seed 1): no default values left."""
    torch.manual_seed(1)
    with torch.no_grad():
        for t in list(net.parameters()) + [b for b in net.buffers() if b.is_floating_point()]:
            t.copy_(torch.randn_like(t))
    return net


BURN = SHARED_DATA / "burn"  # records Burn itself wrote


# Burn's MNIST model as Burn 0.19.1 and 0.21.0 wrote it, keyed by the version of its record layout
FILES = {"0.19.0": BURN / "mnist-inference-web-v0.19.1.bin", "0.21.0": BURN / "mnist-inference-web-v0.21.0.bin"}


needs_burn = pytest.mark.skipif(not BURN.is_dir() or not (SHARED_DATA / "MNIST").is_dir(),
                                reason="Burn's record files / MNIST not present")


def saved_checkpoint(tmp_path, net):
    """A Lightning-style training checkpoint of `net` (with one Adam state) saved by the recorder plugin."""
    path = tmp_path / "epoch=0-step=1.ckpt"
    RecorderCheckpointIO(DefaultRecorder()).save_checkpoint(
        {"state_dict": {f"model.{k}": v for k, v in net.state_dict().items()}, "pytorch-lightning_version": "2.6.6",
         "optimizer_states": [{"state": {0: {"exp_avg_sq": torch.tensor([1e-8, 2049.0])}}}]}, path)
    return path


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def temp_of(path: Path, pid: int) -> Path:
    """A temp file as a writer with `pid` on this host names it."""
    prefix = temp_prefix(path).replace(f".{os.getpid()}.", f".{pid}.")
    tmp = path.parent / f"{prefix}abc123_x.tmp"
    tmp.write_bytes(b"half a checkpoint")
    return tmp
