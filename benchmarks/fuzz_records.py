"""A longer run of the record fuzz test (tests/test_record_burn.py): mutated and truncated valid
files of every recorder and a training checkpoint; only RecordError may come out.

    python benchmarks/fuzz_records.py [--cases 50000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=50_000)
    args = parser.parse_args()
    env = {**os.environ, "BURNLIKE_FUZZ_CASES": str(args.cases)}
    start = time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=0",
                            "tests/test_record_burn.py::test_fuzz_only_record_errors"], cwd=ROOT, env=env)
    elapsed = time.perf_counter() - start
    print(f"{args.cases} fuzzed inputs in {elapsed:.0f} s ({args.cases / elapsed:.0f}/s): "
          f"{'only RecordError' if code == 0 else 'FAILED'}")
    sys.exit(code)


if __name__ == "__main__":
    main()
