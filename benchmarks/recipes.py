"""nanoGPT's shakespeare_char CPU recipe two ways, on the same batches: a hand-written PyTorch loop
(written the way nanoGPT's train.py loop is) and burnlike (`examples/shakespeare_char.py`:
`LearnerBuilder` with `num_iterations`/`valid_every`, a `Loss` metric, the progress display, Burn's
checkpoints and summary).

Both start from the same weights (same seed, same model class), read the same train batches (the
example's seeded loader, one pass in order) and evaluate the same validation batches (the valid
loader at the epoch Lightning tells it), with nanoGPT's AdamW groups, its `get_lr` (as
`tests/helpers/nanogpt.py` writes it) and global-norm clipping; the hand loop saves a checkpoint (model and
optimizer) at each evaluation that improves, as nanoGPT does. The final validation losses should
then agree to float rounding: the schedule's two formulas differ in their last bits.

Each run is its own process, alternating which goes first; per run: the recipe's wall time (data,
model, training, evaluations and checkpoints; not the interpreter's start), tokens/s, CPU time,
time stolen by the hypervisor, and the final validation loss. The medians' ratio is printed.

    python benchmarks/recipes.py                       # the whole recipe, 3 runs each
    python benchmarks/recipes.py --quick               # 200 iterations, validation every 50 on 5 batches
    python benchmarks/recipes.py --iters 500 --repeats 2 --threads 1
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.helpers: nanoGPT's get_lr, written once

from train_overhead import steal_seconds  # noqa: E402

from tests.helpers.nanogpt import get_lr  # noqa: E402


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shakespeare_char", REPO / "examples" / "shakespeare_char.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def hand_loop(ex: ModuleType, cfg: Any, out_dir: str) -> float:
    """nanoGPT's loop: set the lr, forward, backward, clip, step, zero the gradients; evaluate every
    `valid_every` iterations; a checkpoint when the validation loss improves. Returns the last one."""
    import torch
    import torch.nn.functional as F

    import burnlike

    burnlike.seed(cfg.seed)
    corpus = ex.ShakespeareChar.load()
    train_loader, valid_loader = ex.dataloaders(cfg, corpus)
    model = cfg.model.init("cpu")
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.optimizer.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=cfg.learning_rate, betas=(cfg.optimizer.beta_1, cfg.optimizer.beta_2),
                                  eps=cfg.optimizer.epsilon)
    ordered = [p for g in optimizer.param_groups for p in g["params"]]  # all of them, as nanoGPT clips
    best, last = float("inf"), float("nan")
    batches = iter(train_loader)
    for it in range(cfg.num_iterations):
        lr = get_lr(it, cfg.learning_rate, cfg.min_learning_rate, cfg.warmup_iterations, cfg.num_iterations)
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = next(batches)
        logits = model(batch.inputs)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), batch.targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ordered, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if (it + 1) % cfg.valid_every == 0:
            last = evaluate(model, valid_loader, (it + 1) // cfg.valid_every - 1, cfg.valid_batches)
            print(f"step {it + 1}: val loss {last:.4f}", flush=True)
            if last < best:
                best = last
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": it + 1,
                            "best_val_loss": best}, os.path.join(out_dir, "ckpt.pt"))
    return last


def evaluate(model: Any, valid_loader: Any, epoch: int, count: int) -> float:
    import torch
    import torch.nn.functional as F

    model.eval()
    valid_loader.sampler.set_epoch(epoch)  # the order Lightning gives the validation after that epoch
    losses = []
    with torch.no_grad():
        for _, batch in zip(range(count), valid_loader):
            logits = model(batch.inputs)
            losses.append(F.cross_entropy(logits.view(-1, logits.size(-1)), batch.targets.reshape(-1)).item())
    model.train()
    return sum(losses) / len(losses)


def burnlike_run(ex: ModuleType, cfg: Any, out_dir: str) -> float:
    import burnlike

    burnlike.seed(cfg.seed)
    corpus = ex.ShakespeareChar.load()
    train_loader, valid_loader = ex.dataloaders(cfg, corpus)
    result = ex.learner(out_dir, cfg, "cpu").fit(train_loader, valid_loader)
    loss = result.summary.get("valid", "Loss")
    return float(loss.epochs[max(loss.epochs)])


def child(kind: str, args: argparse.Namespace) -> None:
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    ex = example()
    cfg = ex.recipe().with_num_iterations(args.iters).with_valid_every(args.valid_every) \
        .with_valid_batches(args.eval_batches).with_warmup_iterations(min(100, args.iters // 10))
    with tempfile.TemporaryDirectory() as out_dir:
        wall, cpu, steal = time.perf_counter(), time.process_time(), steal_seconds()
        loss = (hand_loop if kind == "hand" else burnlike_run)(ex, cfg, out_dir)
        wall, cpu, steal = time.perf_counter() - wall, time.process_time() - cpu, steal_seconds() - steal
    tokens = args.iters * cfg.batch_size * cfg.model.block_size
    print("RESULT " + json.dumps({"kind": kind, "wall": wall, "cpu": cpu, "steal": steal, "loss": loss,
                                  "tokens_per_s": tokens / wall}), flush=True)


def run_child(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--iters", str(args.iters), "--valid-every",
               str(args.valid_every), "--eval-batches", str(args.eval_batches), "--threads", str(args.threads)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    process = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.exit(f"{kind} run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT "):])
    result["process"] = process
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=2000, help="training iterations (a multiple of --valid-every)")
    parser.add_argument("--valid-every", type=int, default=250)
    parser.add_argument("--eval-batches", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each, interleaved")
    parser.add_argument("--quick", action="store_true", help="200 iterations, validation every 50 on 5 batches")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads in each run (0: torch's default); 1 steadies ratios on a loaded machine")
    parser.add_argument("--child", choices=("hand", "burnlike"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.iters, args.valid_every, args.eval_batches = 200, 50, 5
    if args.iters % args.valid_every:
        parser.error(f"--iters {args.iters} is not a multiple of --valid-every {args.valid_every}")
    if args.child:
        child(args.child, args)
        return
    print(f"nanoGPT shakespeare_char CPU recipe: {args.iters} iterations, validation every {args.valid_every} "
          f"on {args.eval_batches} batches; {args.repeats} runs of each, alternating; torch threads: "
          f"{args.threads or 'default'}; load average {os.getloadavg()[0]:.2f}")
    runs: dict[str, list[dict[str, Any]]] = {"hand": [], "burnlike": []}
    for i in range(args.repeats):
        for kind in (("hand", "burnlike") if i % 2 == 0 else ("burnlike", "hand")):
            r = run_child(kind, args)
            runs[kind].append(r)
            print(f"  {kind:9s} recipe {r['wall']:7.2f} s  ({r['tokens_per_s']:8.0f} tokens/s)  cpu {r['cpu']:7.2f} s  "
                  f"steal {r['steal']:5.2f} s  process {r['process']:7.2f} s  final val loss {r['loss']:.4f}",
                  flush=True)
    med = {k: {f: statistics.median(r[f] for r in rs) for f in ("wall", "cpu", "process", "loss", "tokens_per_s")}
           for k, rs in runs.items()}
    for kind in ("hand", "burnlike"):
        m = med[kind]
        print(f"median {kind:9s} recipe {m['wall']:7.2f} s  {m['tokens_per_s']:8.0f} tokens/s  cpu {m['cpu']:7.2f} s  "
              f"process {m['process']:7.2f} s  final val loss {m['loss']:.4f}")
    h, b = med["hand"], med["burnlike"]
    print(f"burnlike / hand loop: wall {b['wall'] / h['wall']:.3f}x  cpu {b['cpu'] / h['cpu']:.3f}x  "
          f"process {b['process'] / h['process']:.3f}x  final val loss {b['loss'] - h['loss']:+.4f}")
    fastest = {k: {f: min(r[f] for r in rs) for f in ("wall", "cpu")} for k, rs in runs.items()}
    print(f"fastest runs' ratio (the least disturbed on a loaded machine): wall "
          f"{fastest['burnlike']['wall'] / fastest['hand']['wall']:.3f}x  cpu "
          f"{fastest['burnlike']['cpu'] / fastest['hand']['cpu']:.3f}x")
    pairs = [r["wall"] / s["wall"] for r, s in zip(runs["burnlike"], runs["hand"])]
    print("per-pair wall ratios: " + ", ".join(f"{p:.3f}" for p in pairs))

if __name__ == "__main__":
    main()
