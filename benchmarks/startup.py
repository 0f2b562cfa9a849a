"""Start-up time of the Hydra app against `python -c "import lightning"` (issue 4: burnlike's own
addition must stay under 20%).

    python benchmarks/startup.py [--repeats 5]

Every command runs as a fresh process; the commands are interleaved round by round so a busy
machine slows them alike, and the median is reported. Rows:
- `train.py --help` / `--cfg job`: what a user waits for before seeing the config. They do not
  import Lightning at all, so the ratio is below 1 (torch, for the model schemas, is most of it).
- "run imports": everything `train.py` imports before training starts (Lightning included);
  its ratio minus 1 is burnlike's own addition on top of importing Lightning.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_IMPORTS = ("import lightning, burnlike, burnlike.app.run, burnlike.app.tree, burnlike.data, burnlike.record, "
               "burnlike.models.mnist, burnlike.train.metric; from burnlike.train import LearnerBuilder; "
               "import burnlike.train.builder, burnlike.train.learner")
TARGET = 0.20


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    commands = {
        'python -c "import lightning"': [py, "-c", "import lightning"],
        "python train.py --help": [py, "train.py", "--help"],
        "python train.py --cfg job": [py, "train.py", "--cfg", "job"],
        "run imports (lightning + burnlike)": [py, "-c", RUN_IMPORTS],
    }
    for cmd in commands.values():  # warm the OS file cache once, untimed
        timed(cmd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeats):
        for name, cmd in commands.items():
            times[name].append(timed(cmd))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base = medians['python -c "import lightning"']
    print(f"{'command':<38} {'median s':>9} {'ratio':>7} {'addition':>9}")
    for name, t in medians.items():
        print(f"{name:<38} {t:9.2f} {t / base:6.2f}x {100 * (t / base - 1):+8.1f}%")
    worst = max(medians[n] / base - 1 for n in medians if n != 'python -c "import lightning"')
    verdict = "within" if worst < TARGET else "OVER"
    print(f"largest addition over `import lightning`: {100 * worst:+.1f}% ({verdict} the {100 * TARGET:.0f}% target)")


if __name__ == "__main__":
    main()
