"""Start-up time of the Hydra app against `python -c "import lightning"` (burnlike's own addition
must stay under 20%), and of `burnlike inspect` against `python -c "import torch"` (at most 1.5×).

    python benchmarks/startup.py [--repeats 5]

Every command runs as a fresh process; the commands are interleaved round by round so a busy
machine slows them alike, and the median is reported. Rows:
- `train.py --help` / `--cfg job`: what a user waits for before seeing the config. They do not
  import Lightning at all, so the ratio is below 1 (torch, for the model schemas, is most of it).
- "run imports": everything `train.py` imports before training starts (Lightning included);
  its ratio minus 1 is burnlike's own addition on top of importing Lightning.
- `burnlike inspect` of a small record, against `import torch`: a look at a file should cost
  about what importing torch does.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_IMPORTS = ("import lightning, burnlike, burnlike.app.run, burnlike.app.tree, burnlike.data, burnlike.record, "
               "burnlike.models.mnist, burnlike.train.metric; from burnlike.train import LearnerBuilder; "
               "import burnlike.train.builder, burnlike.train.learner")
TARGET = 0.20
INSPECT_TARGET = 1.5


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
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "small.mpk"
        subprocess.run([py, "-c", "import torch; from burnlike.record import CompactRecorder; "
                        f"CompactRecorder().save_module(torch.nn.Linear(4, 3), {str(record)!r})"],
                       cwd=ROOT, check=True)
        inspect_rows = {'python -c "import torch"': [py, "-c", "import torch"],
                        "burnlike inspect small.mpk": [py, "-m", "burnlike.cli", "inspect", str(record)]}
        medians = measure({**commands, **inspect_rows}, args.repeats)
    base = medians['python -c "import lightning"']
    print(f"{'command':<38} {'median s':>9} {'ratio':>7} {'addition':>9}")
    for name in commands:
        t = medians[name]
        print(f"{name:<38} {t:9.2f} {t / base:6.2f}x {100 * (t / base - 1):+8.1f}%")
    worst = max(medians[n] / base - 1 for n in commands if n != 'python -c "import lightning"')
    verdict = "within" if worst < TARGET else "OVER"
    print(f"largest addition over `import lightning`: {100 * worst:+.1f}% ({verdict} the {100 * TARGET:.0f}% target)")
    (torch_name, torch_s), (inspect_name, inspect_s) = ((n, medians[n]) for n in inspect_rows)
    ratio = inspect_s / torch_s
    print(f"{torch_name:<38} {torch_s:9.2f}")
    print(f"{inspect_name:<38} {inspect_s:9.2f} {ratio:6.2f}x "
          f"({'within' if ratio <= INSPECT_TARGET else 'OVER'} the {INSPECT_TARGET}x target)")


def measure(commands: dict[str, list[str]], repeats: int) -> dict[str, float]:
    """Each command's median wall time over `repeats` interleaved rounds, after one untimed run."""
    for cmd in commands.values():  # warm the OS file cache once, untimed
        timed(cmd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, cmd in commands.items():
            times[name].append(timed(cmd))
    return {name: statistics.median(ts) for name, ts in times.items()}


if __name__ == "__main__":
    main()
