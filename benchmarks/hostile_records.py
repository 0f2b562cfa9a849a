"""Hostile record files (the cases of tests/helpers/hostile.py), each through every
loader and `burnlike inspect`: what came out, the time it took and the peak memory above the
process's baseline. Bounds: a RecordError (or a load) in < 1 s and < 100 MB.

Each (case, loader) runs in a fresh forked child whose peak-RSS mark is reset first
(/proc/self/clear_refs), so one case's memory never hides another's.

    PYTHONPATH=. python benchmarks/hostile_records.py
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from peak_memory import peak_above, reset_peak  # noqa: E402

from burnlike.cli import main as cli  # noqa: E402
from burnlike.record import DefaultRecorder, RecordError  # noqa: E402
from tests.helpers.hostile import CASES, LOADERS  # noqa: E402 - the tests' files and loaders
from tests.helpers.records import Net  # noqa: E402

TIME_LIMIT_S = 1.0
MEMORY_LIMIT_MB = 100.0


def _inspect(path: Path) -> str:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli(["inspect", str(path)])
    if code not in (0, 2):
        raise RuntimeError(f"inspect exited {code}")
    return f"exit {code}"


def _child(path: Path, loader: str, queue: mp.Queue[tuple[str, float, float]]) -> None:
    model = Net()  # built before the measurement: torch's first allocations in a forked child cost ~36 MB
    before = reset_peak()
    start = time.perf_counter()
    try:
        if loader == "inspect":
            outcome = _inspect(path)
        elif loader == "Module.load_file":
            model.load_file(path)
            outcome = "loaded"
        else:
            LOADERS[loader](path)
            outcome = "loaded"
    except RecordError:
        outcome = "RecordError"
    except Exception as e:  # noqa: BLE001 - reported, and fails the bounds
        outcome = f"{type(e).__name__}!"
    seconds = time.perf_counter() - start
    queue.put((outcome, seconds, peak_above(before) / 2**20))


def main() -> None:
    ctx = mp.get_context("fork")  # the parent has imported torch and burnlike: children start warm
    with tempfile.TemporaryDirectory() as warm:  # first-use costs (torch's lazy inits) stay out of the figures
        Net().load_file(Net().save_file(Path(warm) / "m", DefaultRecorder()))
    loaders = [*LOADERS, "inspect"]
    worst_s = worst_mb = 0.0
    bad = []
    with tempfile.TemporaryDirectory(prefix="burnlike-hostile-") as d:
        print(f"{'case':<34} " + " ".join(f"{name:>22}" for name in loaders))
        for case, (build, _) in CASES.items():
            folder = Path(d) / case.replace(".", "-")
            folder.mkdir()
            path = build(folder)
            cells = []
            for loader in loaders:
                queue: mp.Queue[tuple[str, float, float]] = ctx.Queue()
                child = ctx.Process(target=_child, args=(path, loader, queue))
                child.start()
                outcome, seconds, mb = queue.get(timeout=120)
                child.join()
                worst_s, worst_mb = max(worst_s, seconds), max(worst_mb, mb)
                if outcome.endswith("!") or seconds >= TIME_LIMIT_S or mb >= MEMORY_LIMIT_MB:
                    bad.append(f"{case} / {loader}: {outcome}, {seconds:.2f} s, {mb:.0f} MB")
                short = {"RecordError": "error", "loaded": "loaded"}.get(outcome, outcome)
                cells.append(f"{short} {seconds * 1000:6.0f}ms {mb:4.0f}MB")
            print(f"{case:<34} " + " ".join(f"{c:>22}" for c in cells), flush=True)
    print(f"slowest {worst_s:.3f} s, most memory {worst_mb:.0f} MB above the baseline")
    print("within bounds" if not bad else "OUT OF BOUNDS:\n  " + "\n  ".join(bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
