"""A rank of a CPU process group (gloo) that saves or loads an FSDP2-sharded model through the
compact DCP storage: run by `torch.multiprocessing.start_processes` in the sharded-checkpoint tests."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def trained() -> torch.nn.Module:
    """The model the saving ranks hold: the seeded one, each weight moved by 1 and a third."""
    m = model()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(4.0 / 3.0)
    return m


def rank(rank: int, world: int, folder: str, mode: str, port: int, recorder: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        from torch.distributed.checkpoint import load, save
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        from burnlike.record.checkpoint.dcp import (
            CompactLoadPlanner,
            CompactSavePlanner,
            CompactStorageReader,
            CompactStorageWriter,
        )
        from burnlike.record.format import registry

        mesh = init_device_mesh("cpu", (world,))
        m = trained() if mode == "save" else model()
        for layer in m:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(m, mesh=mesh)
        if mode == "save":
            writer = CompactStorageWriter(folder, registry.by_name(recorder))
            save({"model": m.state_dict(), "step": 7, "lr": [0.5]}, storage_writer=writer,
                 planner=CompactSavePlanner())
            dist.barrier()
            return
        state = {"model": m.state_dict(), "step": 0, "lr": [0.0]}
        load(state, storage_reader=CompactStorageReader(folder), planner=CompactLoadPlanner())
        m.load_state_dict(state["model"])
        full = get_model_state_dict(m, options=StateDictOptions(full_state_dict=True))
        if rank == 0:
            torch.save({"weights": {k: v.clone() for k, v in full.items()}, "step": state["step"], "lr": state["lr"]},
                       out)
        dist.barrier()  # no rank leaves while another still talks to it (gloo aborts on a closed peer)
    finally:
        dist.destroy_process_group()
