"""A rank of a 4-process CPU job (gloo) that saves an FSDP2-sharded model through the compact DCP
storage from 2 of its processes, then loads it into 1, 2 and 4: run by
`torch.multiprocessing.start_processes` in the sharded-checkpoint tests."""

from __future__ import annotations

import torch
import torch.distributed as dist

WORLD = 4
SAVERS = 2
LOADERS = (1, 2, 4)


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


def loaded_path(folder: str, recorder: str, processes: int) -> str:
    """Where rank 0 of the `processes` that loaded `recorder`'s checkpoint writes what they loaded."""
    return f"{folder}/loaded-{recorder}-{processes}.pt"


def rank(rank: int, port: int, folder: str, recorders: list[str]) -> None:
    """Each recorder's checkpoint saved by ranks 0-1, then loaded by ranks 0, 0-1 and 0-3 in turn,
    each group sharding the model over its own processes. `port`: the parent's store, listening
    before any rank starts."""
    store = dist.TCPStore("127.0.0.1", port, WORLD, is_master=False)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=WORLD)
    try:
        # every rank creates every group, in the same order (torch's rule for new_group)
        groups = {n: dist.new_group(list(range(n))) for n in sorted({SAVERS, *LOADERS})}
        for recorder in recorders:
            checkpoint = f"{folder}/{recorder}"
            if rank < SAVERS:
                save_shards(groups[SAVERS], checkpoint, recorder)
            dist.barrier()
            for n in LOADERS:
                if rank < n:
                    load_shards(groups[n], checkpoint, loaded_path(folder, recorder, n))
                dist.barrier()  # no rank leaves while another still talks to it (gloo aborts on a closed peer)
    finally:
        dist.destroy_process_group()


def sharded(m: torch.nn.Module, group: dist.ProcessGroup) -> torch.nn.Module:
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    mesh = DeviceMesh.from_group(group, "cpu")
    for layer in m:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(m, mesh=mesh)
    return m


def save_shards(group: dist.ProcessGroup, checkpoint: str, recorder: str) -> None:
    from torch.distributed.checkpoint import save

    from burnlike.record.checkpoint.dcp import CompactSavePlanner, CompactStorageWriter
    from burnlike.record.format import registry

    m = sharded(trained(), group)
    save({"model": m.state_dict(), "step": 7, "lr": [0.5]},
         storage_writer=CompactStorageWriter(checkpoint, registry.by_name(recorder)),
         planner=CompactSavePlanner(), process_group=group)


def load_shards(group: dist.ProcessGroup, checkpoint: str, out: str) -> None:
    from torch.distributed.checkpoint import load
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    from burnlike.record.checkpoint.dcp import CompactLoadPlanner, CompactStorageReader

    m = sharded(model(), group)
    state = {"model": m.state_dict(), "step": 0, "lr": [0.0]}
    load(state, storage_reader=CompactStorageReader(checkpoint), planner=CompactLoadPlanner(), process_group=group)
    m.load_state_dict(state["model"])
    full = get_model_state_dict(m, options=StateDictOptions(full_state_dict=True))
    if dist.get_rank() == 0:
        torch.save({"weights": {k: v.clone() for k, v in full.items()}, "step": state["step"], "lr": state["lr"]},
                   out)
