"""CompactRecorder vs torch.save vs safetensors: file size, save time, load time, peak memory.

For models of ~1M, ~10M and ~100M parameters (stacks of Linear layers), in one process. Saves come
two ways each: plain (CompactRecorder's default and torch.save: the file is complete when the call
returns, the disk gets it later) and durable (CompactRecorder's checkpoint saves, and torch.save made
as durable: temp file, fsync, rename; on the disk when the call returns):
    python benchmarks/records.py [--sizes 1e6,1e7,1e8] [--repeats 3] [--threads N] [--no-memory] [--fresh]
Repeats are interleaved across the ways (median reported), after a warm-up of each; wall time and
process CPU time (all threads) are both reported. `--fresh` times each operation in a new process
instead: in one long process torch.load's time depends on whether glibc reuses memory that earlier
repeats freed (0.11 s or 0.3 s for the same 380 MiB file here), a fresh process never does.
Each save writes a new file (the previous one is deleted and synced first, untimed): replacing it
would time the filesystem freeing the old file, which whichever way wrote it costs 0.2-0.3 s for
a 190-380 MiB file on this VM's ext4 mounted with `discard` (each freed block is trimmed).
Linear stacks are the worst case for Burn's layout: every weight is stored transposed.
Peak memory is measured in a fresh child per operation: Linux's peak-RSS mark is reset after the
model is built (/proc/self/clear_refs), and the peak during the operation minus the RSS before it
is reported: the extra memory the save or load needed beyond the model itself.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue as queue_module
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import torch
from peak_memory import peak_above, reset_peak
from torch import nn

LAYOUT = os.environ.get("BURNLIKE_BENCH_LAYOUT", "linear")


class Block(nn.Module):
    """A transformer block's weights (GPT-2: d=768): attention in/out, MLP, two norms."""

    def __init__(self, d: int = 768) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)


def model_of(params: float) -> nn.Module:
    """Linear stacks (Burn stores each weight transposed: the worst case); `--layout embedding`:
    Embedding stacks (stored as is: what the format itself costs); `--layout transformer`: a
    token embedding plus transformer blocks (GPT-2-sized at 100M: 32000×768 and d=768), about 3/4
    of it Linear weights."""
    width = 1024
    torch.manual_seed(0)
    if LAYOUT == "embedding":
        return nn.Sequential(*[nn.Embedding(width, width) for _ in range(max(1, round(params / (width * width))))])
    if LAYOUT == "transformer":
        d, vocab = (768, 32000) if params >= 5e7 else (384, 8000) if params >= 5e6 else (128, 4000)
        embedding = nn.Embedding(vocab, d)
        per_block = sum(p.numel() for p in Block(d).parameters())
        blocks = max(1, round((params - embedding.weight.numel()) / per_block))
        return nn.Sequential(embedding, *[Block(d) for _ in range(blocks)])
    depth = max(1, round(params / (width * width + width)))
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])


def save_burn(model: nn.Module, path: Path) -> Path:
    from burnlike.record import CompactRecorder

    return CompactRecorder().save_module(model, path)


def save_burn_durable(model: nn.Module, path: Path) -> Path:
    """As checkpoints are saved: on the disk before the call returns."""
    from burnlike.record import CompactRecorder

    return CompactRecorder().save_module(model, path, durable=True)


def load_burn(model: nn.Module, path: Path) -> None:
    from burnlike.record import CompactRecorder

    CompactRecorder().load_module(model, path)


def save_torch(model: nn.Module, path: Path) -> Path:
    target = path.with_suffix(".pt")
    torch.save(model.state_dict(), target)
    return target


def save_torch_durable(model: nn.Module, path: Path) -> Path:
    """torch.save made as durable as CompactRecorder's save: temp file, fsync, rename."""
    target = path.with_suffix(".durable.pt")
    tmp = target.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        torch.save(model.state_dict(), f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    return target


def load_torch(model: nn.Module, path: Path) -> None:
    model.load_state_dict(torch.load(path, weights_only=True))


def save_st(model: nn.Module, path: Path) -> Path:
    from safetensors.torch import save_file

    target = path.with_suffix(".safetensors")
    save_file(model.state_dict(), str(target))
    return target


def load_st(model: nn.Module, path: Path) -> None:
    from safetensors.torch import load_file

    model.load_state_dict(load_file(str(path)))


def durable_floor(source: Path, target: Path, repeats: int) -> float:
    """Seconds to write `source`'s bytes durably with nothing to encode: read beforehand (untimed),
    then written as CompactRecorder writes, in parts, through `atomic_write` (file allocated up front,
    temp file, writeback started as it goes, fsync, rename). No durable save of that file can be
    faster on this disk."""
    from burnlike.record.format.files import atomic_write
    from burnlike.record.tensor.buffers import PART_BYTES

    data = memoryview(source.read_bytes())

    def write(f: IO[bytes]) -> None:
        for i in range(0, len(data), PART_BYTES):
            f.write(data[i:i + PART_BYTES])

    times = []
    for _ in range(repeats):
        target.unlink(missing_ok=True)
        os.sync()
        t = time.perf_counter()
        atomic_write(target, write, len(data), durable=True)
        times.append(time.perf_counter() - t)
    target.unlink()
    os.sync()
    return statistics.median(times)


WAYS: dict[str, tuple[Callable[..., Path], Callable[..., None]]] = {
    "CompactRecorder (.mpk, f16)": (save_burn, load_burn),
    "CompactRecorder, durable": (save_burn_durable, load_burn),
    "torch.save (.pt, f32)": (save_torch, load_torch),
    "torch.save+fsync+rename": (save_torch_durable, load_torch),
    "safetensors (f32)": (save_st, load_st),
}


def run_op(way: str, op: str, model: nn.Module, path: Path) -> tuple[float, float, Path]:
    """One save or load, timed: (wall s, process cpu s, the file saved or loaded)."""
    save, load = WAYS[way]
    t, c = time.perf_counter(), time.process_time()
    if op == "save":
        path = save(model, path)
    else:
        load(model, path)
    return time.perf_counter() - t, time.process_time() - c, path


def _child(way: str, op: str, params: float, path: str, queue: mp.Queue) -> None:
    """One save or load in a fresh process: (peak bytes above the model, wall s, process cpu s, the
    file saved or loaded)."""
    model = model_of(params)
    save, load = WAYS[way]
    tiny = model_of(1e4)  # import what the operation needs before measuring, on a tiny model: a
    warmup = save(tiny, Path(path).with_name("warmup-" + Path(path).name))  # the big file would leave
    if op == "load":  # freed memory that torch.load's next tensors reuse; a new run's first load can't
        load(tiny, warmup)
    before = reset_peak()
    wall, cpu, used = run_op(way, op, model, Path(path))
    queue.put((peak_above(before), wall, cpu, str(used)))


def in_child(way: str, op: str, params: float, path: Path) -> tuple[int, float, float, Path]:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(way, op, params, str(path), queue))
    proc.start()
    while True:  # a child that dies (a failed load) must not leave the parent waiting forever
        try:
            peak, wall, cpu, used = queue.get(timeout=1.0)
            break
        except queue_module.Empty:
            if not proc.is_alive():
                raise RuntimeError(f"{way} {op} failed in its child process (exit code {proc.exitcode})") from None
    proc.join()
    return int(peak), float(wall), float(cpu), Path(used)


def main() -> None:
    global LAYOUT
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,1e7,1e8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory children")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads for all ways (0: default)")
    parser.add_argument("--fresh", action="store_true",
                        help="time every save and load in a fresh process (as a new run loading a checkpoint "
                             "does): torch.load's times in one long process depend on memory earlier repeats freed")
    parser.add_argument("--layout", choices=["linear", "embedding", "transformer"], default="linear",
                        help="linear: weights stored transposed (default); embedding: stored as is; "
                             "transformer: GPT-2-style mix")
    args = parser.parse_args()
    os.environ["BURNLIKE_BENCH_LAYOUT"] = args.layout  # the peak-memory children build the same model
    LAYOUT = args.layout
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"layout: {args.layout}, torch threads: {torch.get_num_threads()}, os.cpu_count: {os.cpu_count()}, "
          f"load average: {os.getloadavg()[0]:.2f}")
    for params in [float(s) for s in args.sizes.split(",")]:
        model = model_of(params)
        n = sum(p.numel() for p in model.parameters())
        rows = {}
        with tempfile.TemporaryDirectory() as tmp:
            for way, (save, load) in WAYS.items():  # warm-up: imports, first-touch of code paths
                load(model_of(1e4), save(model_of(1e4), Path(tmp) / ("warm-" + way.split()[0])))
            times: dict[str, tuple[list[float], list[float]]] = {way: ([], []) for way in WAYS}
            cpu: dict[str, tuple[list[float], list[float]]] = {way: ([], []) for way in WAYS}
            paths: dict[str, Path] = {}
            peaks: dict[str, tuple[list[int], list[int]]] = {way: ([], []) for way in WAYS}
            for _ in range(args.repeats):  # interleaved, so background load hits every way alike
                for way in WAYS:
                    for i, op in enumerate(("save", "load")):
                        target = Path(tmp) / way.split()[0] if op == "save" else paths[way]
                        if op == "save" and way in paths:  # each save writes a new file: see the docstring
                            paths[way].unlink()
                            os.sync()
                        if args.fresh:
                            peak, wall, c, paths[way] = in_child(way, op, params, target)
                            peaks[way][i].append(peak)
                        else:
                            wall, c, paths[way] = run_op(way, op, model, target)
                        times[way][i].append(wall)
                        cpu[way][i].append(c)
                        if op == "save":
                            os.sync()
            for way in WAYS:
                base = Path(tmp) / way.split()[0]
                if args.no_memory:
                    mem = (0, 0)
                elif args.fresh:  # the timing children measured it already
                    mem = (max(peaks[way][0]), max(peaks[way][1]))
                else:
                    mem = (in_child(way, "save", params, base)[0], in_child(way, "load", params, paths[way])[0])
                rows[way] = (paths[way].stat().st_size, *(statistics.median(v) for v in (*times[way], *cpu[way])), *mem)
            floor = durable_floor(paths["CompactRecorder (.mpk, f16)"], Path(tmp) / "floor.mpk", args.repeats)
        ref = rows["torch.save (.pt, f32)"]
        print(f"\n{n / 1e6:.1f}M parameters (f32 weights: {n * 4 / 2**20:.0f} MiB), median of {args.repeats}"
              + (", each operation in a fresh process" if args.fresh else ""))
        print(f"{'format':<28} {'size MiB':>9} {'×pt':>6} {'save s':>7} {'×pt':>6} {'load s':>7} {'×pt':>6}"
              f" {'save cpu s':>10} {'×pt':>6} {'load cpu s':>10} {'×pt':>6} {'save peak MiB':>14} {'load peak MiB':>14}")
        for way, (size, save_s, load_s, save_cpu, load_cpu, save_mem, load_mem) in rows.items():
            print(f"{way:<28} {size / 2**20:9.1f} {size / ref[0]:6.3f} {save_s:7.3f} {save_s / ref[1]:6.2f}"
                  f" {load_s:7.3f} {load_s / ref[2]:6.2f} {save_cpu:10.3f} {save_cpu / ref[3]:6.2f}"
                  f" {load_cpu:10.3f} {load_cpu / ref[4]:6.2f} {save_mem / 2**20:14.0f} {load_mem / 2**20:14.0f}")
        size, save_s, load_s = rows["CompactRecorder (.mpk, f16)"][:3]
        durable_s, durable_torch_s = rows["CompactRecorder, durable"][1], rows["torch.save+fsync+rename"][1]
        load_target = 0.45 if LAYOUT != "embedding" else 0.3  # Burn's transposed Linear weights cost a transpose
        print(f"targets: size {size / ref[0]:.3f}x (<= 0.51), save {save_s / ref[1]:.2f}x (<= 0.6), "
              f"load {load_s / ref[2]:.2f}x (<= {load_target}); durable save {durable_s / ref[1]:.2f}x torch.save, "
              f"{durable_s / durable_torch_s:.2f}x torch.save+fsync+rename. cpu s: process CPU time, all threads "
              "(steadier than wall time on a busy machine)")
        print(f"durable floor: the CompactRecorder file's bytes written durably with nothing to encode took "
              f"{floor:.3f} s ({floor / ref[1]:.2f}x torch.save), in this process: the disk's share of the save")


if __name__ == "__main__":
    main()
