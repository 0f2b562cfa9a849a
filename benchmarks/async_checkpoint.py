"""Training-thread stall per checkpoint save: `RecorderCheckpointIO(async_save=True)` vs synchronous.

    python benchmarks/async_checkpoint.py [--params 1e8] [--repeats 3] [--recorder compact|default] [--adam]

The async save's stall is the time `save_checkpoint` takes to return (the tensors' snapshot, at
the recorder's precision for the weights); the write runs on the writer thread. The synchronous
figure is the whole save (encode, write, fsync, rename). Each async save is waited for before the
next one, so the two never compete; medians of `--repeats` runs after a warm-up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from records import model_of  # noqa: E402

from burnlike.record import RecorderCheckpointIO  # noqa: E402
from burnlike.record.format.registry import by_name as registry_recorder  # noqa: E402


def checkpoint_of(model: torch.nn.Module, adam: bool) -> dict[str, Any]:
    """A Lightning-shaped checkpoint: weights, counters, and (`adam`) Adam's two moments per weight."""
    ckpt: dict[str, Any] = {"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
                            "pytorch-lightning_version": "2.6.6", "epoch": 0, "global_step": 100}
    if adam:
        ckpt["optimizer_states"] = [{"state": {i: {"step": torch.tensor(100.0), "exp_avg": torch.zeros_like(p),
                                                   "exp_avg_sq": torch.zeros_like(p)}
                                               for i, p in enumerate(model.parameters())},
                                     "param_groups": [{"lr": 1e-3, "params": list(range(len(list(model.parameters()))))}]}]
    return ckpt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", type=float, default=1e8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--recorder", default="compact", help="learner.recorder short name (compact, default, ...)")
    parser.add_argument("--adam", action="store_true", help="include Adam's moments (3× the tensors)")
    args = parser.parse_args()
    model = model_of(args.params)
    n = sum(p.numel() for p in model.parameters())
    ckpt = checkpoint_of(model, args.adam)
    sync_io = RecorderCheckpointIO(registry_recorder(args.recorder))
    async_io = RecorderCheckpointIO(registry_recorder(args.recorder), async_save=True)
    sync_s: list[float] = []
    stall_s: list[float] = []
    write_s: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats + 1):  # the first round is a warm-up
            t = time.perf_counter()
            sync_io.save_checkpoint(ckpt, Path(tmp) / "sync.ckpt")
            sync = time.perf_counter() - t
            t = time.perf_counter()
            async_io.save_checkpoint(ckpt, Path(tmp) / "async.ckpt")
            stall = time.perf_counter() - t
            async_io.wait()
            total = time.perf_counter() - t
            if i:
                sync_s.append(sync)
                stall_s.append(stall)
                write_s.append(total)
        async_io.teardown()
        size = (Path(tmp) / "sync.ckpt").stat().st_size
    sync, stall = statistics.median(sync_s), statistics.median(stall_s)
    print(f"{n / 1e6:.0f}M parameters, recorder {args.recorder}, adam moments: {args.adam}, file {size / 2**20:.0f} MiB, "
          f"torch threads {torch.get_num_threads()}")
    print(f"  synchronous save:              {sync:.3f} s")
    print(f"  async: training-thread stall   {stall:.3f} s  ({100 * stall / sync:.1f}% of the synchronous save)")
    print(f"  async: stall + write (waited)  {statistics.median(write_s):.3f} s")


if __name__ == "__main__":
    main()
