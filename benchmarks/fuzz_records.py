"""A longer run of the record fuzz test (tests/record/test_init.py, cases from tests/helpers/fuzz.py): mutated and truncated valid
files of every recorder and precision (distinct files) and a training checkpoint per recorder,
loaded in one process; only RecordError may come out.

Reports the time per case (the load's: p50, p99, p99.99, max), peak RSS and RSS growth after the first pass
over the files, and checks issue 15's bounds (p99.99 < 50 ms, growth < 50 MB).

    PYTHONPATH=. python benchmarks/fuzz_records.py [--cases 100000]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402

from tests.helpers.fuzz import fuzz_case, valid_files  # noqa: E402 - the test's files and mutations

P9999_LIMIT_MS = 50.0
GROWTH_LIMIT_MB = 50.0


def rss_mb() -> float:
    """Resident set size now (Linux: /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def summary(times: list[float], warm: float) -> tuple[str, float, float]:
    """Per-case percentiles and RSS so far: (text, p99.99 in ms, RSS growth in MB)."""
    ms = sorted(t * 1000 for t in times)
    end = rss_mb()
    growth = end - (warm or end)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    p9999 = percentile(ms, 0.9999)
    text = (f"per case: p50 {percentile(ms, 0.5):.2f} ms, p99 {percentile(ms, 0.99):.2f} ms, p99.99 {p9999:.2f} ms, "
            f"max {ms[-1]:.2f} ms; RSS {warm or end:.0f} MB after the first passes, {end:.0f} MB now "
            f"(growth {growth:+.1f} MB), peak {peak:.0f} MB")
    return text, p9999, growth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--report-every", type=int, default=10_000, help="print the figures so far every N cases")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    torch.set_num_threads(1)  # KiB-sized cases: torch's thread pool only adds contention (and noise)
    times: list[float] = []
    raised = 0
    warm = 0.0
    with tempfile.TemporaryDirectory(prefix="burnlike-fuzz-") as d:
        files = valid_files(Path(d))
        start = time.perf_counter()
        for i in range(args.cases):
            if i == 2 * len(files):  # every file loaded twice: caches and allocator pools are warm
                warm = rss_mb()
            refused, seconds = fuzz_case(files, i, rng, Path(d))  # anything but RecordError propagates
            raised += refused
            times.append(seconds)
            if (i + 1) % args.report_every == 0 and i + 1 < args.cases:
                print(f"[{i + 1} cases, {time.perf_counter() - start:.0f} s] {summary(times, warm)[0]}", flush=True)
        elapsed = time.perf_counter() - start
    text, p9999, growth = summary(times, warm)
    print(f"{args.cases} fuzzed inputs of {len(files)} distinct files in {elapsed:.0f} s "
          f"({args.cases / elapsed:.0f}/s): only RecordError ({raised} refused, {args.cases - raised} loaded)")
    print(text)
    ok = p9999 < P9999_LIMIT_MS and growth < GROWTH_LIMIT_MB
    print("within bounds" if ok else f"OUT OF BOUNDS (p99.99 < {P9999_LIMIT_MS} ms, growth < {GROWTH_LIMIT_MB} MB)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
