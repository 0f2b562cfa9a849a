"""Models, checkpoints and record rewriting shared by the tests of `burnlike.record`: a small
`Module` (`Tiny`), one with weights big enough for threaded loads (`Wide`), the checkpoint
Lightning saves for a `StepModule`, and raw MessagePack read/write to corrupt a saved record."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import msgpack
import torch
from torch import nn

from burnlike.module import Module

PL_VERSION = "2.6"


def burnlike_threads() -> list[str]:
    """The names of burnlike's own threads (save workers, load threads, async writers) alive at the call."""
    return [t.name for t in threading.enumerate() if t.name.startswith("burnlike")]


def seeded_linear(seed: int) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(2, 2)


class Tiny(Module):
    def __init__(self, width: int = 3) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)


def randomised_params(module: nn.Module, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p))
    return module


class Wide(nn.Module):
    """Several weights above the threaded-load threshold (1 MiB), of uneven sizes."""

    def __init__(self, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.a = nn.Linear(1024, 768)
        self.b = nn.Linear(768, 1000, bias=False)
        self.emb = nn.Embedding(2000, 300)
        self.c = nn.Linear(300, 4)
        self.to(dtype)


def lightning_checkpoint(model: nn.Module, drop: str | None = None) -> dict:
    """What Lightning saves for a StepModule(model): weights under `model.`, optimizer state beside."""
    state = OrderedDict((f"model.{k}", v.clone()) for k, v in model.state_dict().items() if k != drop)
    return {"epoch": 2, "global_step": 6, "pytorch-lightning_version": "2.5.0", "state_dict": state,
            "optimizer_states": [{"state": {0: {"step": torch.tensor(6.0), "exp_avg": torch.randn(3, 3)}},
                                  "param_groups": [{"lr": 0.1, "params": [0, 1, 2, 3]}]}],
            "loops": {"pair": (torch.arange(3), "x")}}


def unpack(path: Path) -> dict:
    """A MessagePack record file as plain Python values, to edit and `repack`."""
    return msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)


def repack(path: Path, record: dict) -> None:
    path.write_bytes(msgpack.packb(record, use_bin_type=True))
