"""Sharded checkpoints: burnlike's compact DCP storage against torch's default DCP files.

    python benchmarks/sharded_checkpoint.py [--params 1e8] [--procs 2] [--repeats 5] [--adam]
                                            [--recorder compact|default] [--device cpu|cuda] [--dir DIR]

`--procs` processes (gloo on the CPU, NCCL on GPUs: one per GPU) shard one model with FSDP2's
`fully_shard` and save its state dict with DCP twice per round, through
`CompactStorageWriter(recorder)` (Burn's MessagePack records: f16 weights under `compact`) and
through torch's `FileSystemWriter` (its default: full precision, pickled metadata), then load each
back into the sharded model with the matching reader. The two are interleaved round by round, so a
busy machine slows both alike; the first round is a warm-up, the medians of the others are
reported, with the compact/DCP ratio of bytes on disk, save time and load time; the order of the
two alternates between rounds. A time is from a barrier before the call to a barrier after it on
every rank (what a training step waits for); the CPU time is every rank's process time, summed,
the steadier figure on a busy machine.
`--adam` adds Adam's two moments per weight (kept at full precision by every recorder), the
optimizer state a training checkpoint holds beside the weights.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def model_of(params: float, width: int = 2048) -> torch.nn.Module:
    """Square Linear layers of `width`, as many as make about `params` weights."""
    layers = max(1, round(params / (width * width + width)))
    return torch.nn.Sequential(*(torch.nn.Linear(width, width) for _ in range(layers)))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def state_of(model: torch.nn.Module, adam: bool) -> dict[str, Any]:
    """What the benchmark saves: the sharded weights, and Adam's moments shaped like them."""
    state: dict[str, Any] = {"model": model.state_dict(), "step": 100}
    if adam:
        state["optim"] = {f"{k}.{m}": torch.zeros_like(v) for k, v in model.state_dict().items()
                          for m in ("exp_avg", "exp_avg_sq")}
    return state


def rank_main(rank: int, world: int, port: int, args: argparse.Namespace, root: str, results: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    try:
        from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter, load, save
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        from burnlike.record.checkpoint.dcp import (
            CompactLoadPlanner,
            CompactSavePlanner,
            CompactStorageReader,
            CompactStorageWriter,
        )
        from burnlike.record.format import registry

        torch.manual_seed(0)
        with torch.device(args.device if not cuda else f"cuda:{rank}"):
            model = model_of(args.params)
        mesh = init_device_mesh(args.device, (world,))
        for layer in model:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        state = state_of(model, args.adam)
        recorder = registry.by_name(args.recorder)
        kinds = {
            "compact": (lambda path: {"storage_writer": CompactStorageWriter(path, recorder),
                                      "planner": CompactSavePlanner()},
                        lambda path: {"storage_reader": CompactStorageReader(path, recorder),
                                      "planner": CompactLoadPlanner()}),
            "dcp": (lambda path: {"storage_writer": FileSystemWriter(path)},
                    lambda path: {"storage_reader": FileSystemReader(path)}),
        }
        times: dict[str, dict[str, list[float]]] = {k: {"save": [], "load": []} for k in kinds}
        sizes: dict[str, int] = {}

        cpu: dict[str, dict[str, list[float]]] = {k: {"save": [], "load": []} for k in kinds}

        def timed(fn: Any) -> tuple[float, float]:
            """Wall seconds (barrier to barrier) and CPU seconds summed over the ranks."""
            if cuda:
                torch.cuda.synchronize()
            dist.barrier()
            t, c = time.perf_counter(), time.process_time()
            fn()
            if cuda:
                torch.cuda.synchronize()
            spent = torch.tensor([time.process_time() - c], dtype=torch.float64,
                                 device=f"cuda:{rank}" if cuda else "cpu")
            dist.barrier()
            wall = time.perf_counter() - t
            dist.all_reduce(spent)
            return wall, float(spent.item())

        for round_ in range(args.repeats + 1):
            order = list(kinds) if round_ % 2 else list(reversed(kinds))  # neither always goes first
            for kind in order:
                writer, reader = kinds[kind]
                path = str(Path(root) / f"{kind}-{round_}")
                save_s = timed(lambda: save(state, **writer(path)))  # noqa: B023
                load_s = timed(lambda: load(state, **reader(path)))  # noqa: B023
                if rank == 0:
                    sizes[kind] = folder_bytes(Path(path))
                    shutil.rmtree(path)
                dist.barrier()
                if round_:
                    for op, (wall, spent) in (("save", save_s), ("load", load_s)):
                        times[kind][op].append(wall)
                        cpu[kind][op].append(spent)
        if rank == 0:
            n = sum(p.numel() for p in model.parameters())
            results.put({"params": n, "sizes": sizes,
                         "times": {k: {op: statistics.median(v) for op, v in ops.items()} for k, ops in times.items()},
                         "cpu": {k: {op: statistics.median(v) for op, v in ops.items()} for k, ops in cpu.items()}})
    finally:
        dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", type=float, default=1e8, help="model weights (default 1e8)")
    parser.add_argument("--procs", type=int, default=2, help="processes sharing the model (default 2)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds after a warm-up (default 5)")
    parser.add_argument("--recorder", default="compact", help="the compact side's recorder (compact: f16 weights)")
    parser.add_argument("--adam", action="store_true", help="add Adam's moments, at full precision")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dir", default=None, help="where the checkpoints go (default: a temp dir)")
    args = parser.parse_args()
    if args.device == "cuda" and torch.cuda.device_count() < args.procs:
        parser.error(f"--device cuda --procs {args.procs}: {torch.cuda.device_count()} GPU(s) here")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory(dir=args.dir) as root:
        mp.start_processes(rank_main, args=(args.procs, port, args, root, results), nprocs=args.procs,
                           start_method="spawn")
        out = results.get()
    sizes, times = out["sizes"], out["times"]
    device = torch.cuda.get_device_name(0) if args.device == "cuda" else f"CPU ({os.cpu_count()} cores)"
    print(f"{out['params'] / 1e6:.0f}M weights{' + Adam moments' if args.adam else ''}, {args.procs} processes on "
          f"{device}, recorder {args.recorder}, medians of {args.repeats} rounds")
    print(f"{'':<24} {'compact':>10} {'DCP default':>12} {'ratio':>7}")
    print(f"{'bytes on disk (MiB)':<24} {sizes['compact'] / 2**20:10.1f} {sizes['dcp'] / 2**20:12.1f} "
          f"{sizes['compact'] / sizes['dcp']:6.3f}x")
    for table, label in ((times, "{op} (s)"), (out["cpu"], "{op} CPU (s, all ranks)")):
        for op in ("save", "load"):
            c, d = table["compact"][op], table["dcp"][op]
            print(f"{label.format(op=op):<24} {c:10.3f} {d:12.3f} {c / d:6.3f}x")


if __name__ == "__main__":
    main()
