"""Start-up time of `python train.py --help` and `--cfg job` vs `python -c "import lightning"`.

    python benchmarks/startup.py [--repeats 5]
burnlike's own addition is the ratio minus 1 (target: < 20%). Both sides run as fresh processes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def wall(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    base = wall([sys.executable, "-c", "import lightning"], args.repeats)
    print(f"{'command':<40} {'median s':>9} {'vs import lightning':>20}")
    label = 'python -c "import lightning"'
    print(f"{label:<40} {base:9.2f} {1:19.2f}x")
    for extra in (["--help"], ["--cfg", "job"]):
        t = wall([sys.executable, "train.py", *extra], args.repeats)
        print(f"{'python train.py ' + ' '.join(extra):<40} {t:9.2f} {t / base:19.2f}x")


if __name__ == "__main__":
    main()
