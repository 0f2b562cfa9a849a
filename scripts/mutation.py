"""Mutation score per package: run mutmut 3 over burnlike, then count what the tests caught.

    python scripts/mutation.py                 # mutate and test, then print the table
    python scripts/mutation.py --report-only   # the table from the last run (mutants/ kept)
    python scripts/mutation.py --only burnlike.optim   # one package (results of the others kept)
    python scripts/mutation.py --recheck       # after adding tests: re-test what they didn't catch
    python scripts/mutation.py --sample 300    # a seeded random 300 per package: the score ± its 95% interval

mutmut keeps each mutant's result in mutants/ and re-tests only what changed since, so packages can
be run one at a time and a second run after a fix is short. New tests alone don't make mutmut
re-test a surviving mutant (its function didn't change): `--recheck` forgets the verdicts that
weren't catches (survived, no tests, segfault, suspicious) first, so the next run tries those again.

Why mutmut and not cosmic-ray: mutmut 3 runs, for each mutant, only the tests that executed the
mutated function (it records that in one clean run), with mutants switched on by an environment
variable inside already-imported code, so torch and Lightning are imported once per worker, not
once per mutant. cosmic-ray re-imports the package for each mutant (about 10 s of torch and
Lightning imports here), which alone would take a day over burnlike's ~5,000 mutants on 2 cores.

mutmut re-tests every mutant a run names, so `--only` re-tests its whole package; `--sample N` names
only the sample's mutants without a verdict (or, with `--recheck`, without a catch): a sample's
verdicts from earlier runs stand. The sample (seeded per package, kept in mutants/sample.json) gives
the score of a package in minutes instead of hours, with a 95% Wilson interval around it.

Score = (killed + timeout) / (mutants − accepted equivalents). A timeout counts as caught (the
mutant made a test hang, e.g. a loop bound flipped); "no tests" counts as not caught. Accepted
equivalent mutants are listed with a reason each in scripts/mutation_equivalent.txt. Mutants only a
CUDA run reaches (scripts/mutation_cuda.txt) are counted apart as "cuda only" on a machine without
CUDA: out of the score, and not called equivalent.

Each list names mutants by mutmut's names, which number a function's mutants afresh whenever the
function changes: a listed name that mutmut's last generation doesn't hold is an error that names
its file and line (no table is printed until each such entry is looked up again).

Mutants that only a test marked `slow` can catch (left out of mutmut's runs: subprocesses, DDP) are
listed in scripts/mutation_slow.txt with that test: after each run, a listed mutant that survived is
run against its test (`BURNLIKE_MUTANT_SLOW=1` keeps slow tests in), and counts as killed only if
that test fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
from collections import Counter
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["burnlike.record", "burnlike.train", "burnlike.optim", "burnlike.data", "burnlike.app"]
EQUIVALENT = ROOT / "scripts" / "mutation_equivalent.txt"
SLOW_KILLS = ROOT / "scripts" / "mutation_slow.txt"
CUDA_ONLY = ROOT / "scripts" / "mutation_cuda.txt"
LISTS = (EQUIVALENT, SLOW_KILLS, CUDA_ONLY)
CAUGHT = {"killed", "timeout"}


def mutmut(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("mutmut")
    # One OpenMP thread: mutmut forks each mutant's worker from a process that has already run torch
    # ops, and a forked child's first parallel op then waits forever on libgomp's thread-pool barrier
    # (the pool's threads don't survive a fork). The hang ends at mutmut's wall-clock limit and is
    # counted as a timeout, i.e. as caught: a false kill.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([str(exe), *args], cwd=ROOT, env=env, text=True, capture_output=args[0] != "run",
                          check=False)


def listed(path: Path) -> dict[str, list[str]]:
    """`mutant name  [more fields]  # why` per line: the name's other fields, by name."""
    out: dict[str, list[str]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            fields = line.partition("#")[0].split()
            if fields:
                out[fields[0]] = fields[1:]
    return out


def stale_entries(known: set[str], lists: tuple[Path, ...] = LISTS) -> list[str]:
    """`file:line: name` for each listed mutant that mutmut's last generation doesn't hold: its
    function changed, moved or went, and mutmut numbers a function's mutants afresh, so the entry
    must be looked up again (by `mutmut show` and the function's diff), not left to count silently."""
    out = []
    for path in lists:
        if not path.exists():
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            fields = line.partition("#")[0].split()
            if fields and fields[0] not in known:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                out.append(f"{where}:{number}: {fields[0]}: no such mutant")
    return out


def refuse_stale() -> int:
    """1, naming each stale entry of the lists, when mutmut has generated mutants and any is stale; else 0."""
    known = set(verdicts())
    stale = stale_entries(known) if known else []
    for entry in stale:
        print(entry, file=sys.stderr)
    if stale:
        print(f"{len(stale)} listed mutants don't exist: each list must name mutants mutmut makes now",
              file=sys.stderr)
    return 1 if stale else 0


def equivalents() -> set[str]:
    """The mutants accepted as equivalent (`mutant name  # why it can't be killed` per line)."""
    return set(listed(EQUIVALENT))


def cuda_only() -> set[str]:
    """The mutants only a CUDA run reaches, when this machine has no CUDA device (else none: a GPU
    machine tests them like the others)."""
    import torch

    return set() if torch.cuda.is_available() else set(listed(CUDA_ONLY))


def check_slow_kills(only: list[str] | None) -> None:
    """Run each listed slow test against its mutant, if mutmut left that mutant not caught; a
    failing test turns the verdict into a kill (exit code 1 in mutants/*.meta)."""
    from mutmut.stats import status_by_exit_code

    for meta in (ROOT / "mutants").rglob("*.py.meta"):
        data = json.loads(meta.read_text())
        codes = data.get("exit_code_by_key", {})
        changed = False
        for name, tests in listed(SLOW_KILLS).items():
            code = codes.get(name)
            if code is None or status_by_exit_code[code] in CAUGHT or (only and package_of(name) not in only):
                continue
            env = {**os.environ, "MUTANT_UNDER_TEST": name, "BURNLIKE_MUTANT_SLOW": "1",
                   "PYTHONPATH": str(ROOT / "mutants")}  # the test's own child processes (DDP ranks) too
            # in mutants/, as mutmut runs its tests: `python -m` puts the working directory first on
            # sys.path, and from the repository root that is the unmutated package
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                                 cwd=ROOT / "mutants", env=env, capture_output=True, text=True, check=False)
            killed = run.returncode == 1  # a test failed (2-5: the run itself went wrong)
            print(f"{name}: {'killed' if killed else 'not killed'} by {' '.join(tests)}")
            if killed:
                codes[name] = 1
                changed = True
        if changed:
            meta.write_text(json.dumps(data, indent=4))


def recheck(only: list[str] | None) -> int:
    """Forget the not-caught verdicts in mutants/*.meta (of `only`'s packages, or all)."""
    from mutmut.stats import status_by_exit_code

    forgotten = 0
    for meta in (ROOT / "mutants").rglob("*.py.meta"):
        data = json.loads(meta.read_text())
        codes = data.get("exit_code_by_key", {})
        stale = [k for k, code in codes.items() if code is not None and status_by_exit_code[code] not in CAUGHT
                 and (not only or package_of(k) in only)]
        for k in stale:
            codes[k] = None
        if stale:
            meta.write_text(json.dumps(data, indent=4))
            forgotten += len(stale)
    print(f"{forgotten} verdicts forgotten: the next run re-tests those mutants")
    return forgotten


SAMPLE = ROOT / "mutants" / "sample.json"


def verdicts() -> dict[str, int | None]:
    """Every mutant's exit code so far (None: not tested), from mutants/*.meta."""
    out: dict[str, int | None] = {}
    for meta in (ROOT / "mutants").rglob("*.py.meta"):
        out.update(json.loads(meta.read_text()).get("exit_code_by_key", {}))
    return out


def draw_sample(n: int, packages: list[str]) -> dict[str, list[str]]:
    """A seeded random `n` mutants per package (the same names every time for the same code)."""
    names = sorted(verdicts())
    # Other packages' samples stay: an `--only` run must not drop them from the file.
    sample = json.loads(SAMPLE.read_text()) if SAMPLE.exists() else {}
    for package in packages:
        pool = [m for m in names if package_of(m) == package]
        sample[package] = sorted(random.Random(f"burnlike-{package}").sample(pool, min(n, len(pool))))
    SAMPLE.write_text(json.dumps(sample, indent=1))
    return sample


def wilson(caught: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% interval of a proportion (Wilson): honest near 100%, unlike ± 1.96·sqrt(p(1-p)/n)."""
    if n == 0:
        return 0.0, 100.0
    p = caught / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (centre - half), 100 * (centre + half)


def package_of(mutant: str) -> str | None:
    return next((p for p in PACKAGES if mutant == p or mutant.startswith(p + ".")), None)


def report(sampled: dict[str, list[str]] | None = None) -> int:
    """The table: every mutant of each package, or only each package's sample."""
    within = {m for names in sampled.values() for m in names} if sampled else None
    done = mutmut("results", "--all", "true")
    if done.returncode:
        print(done.stderr, file=sys.stderr)
        return done.returncode
    accepted = equivalents()
    on_gpu_only = cuda_only()
    counts: dict[str, Counter[str]] = {p: Counter() for p in PACKAGES}
    survivors: list[str] = []
    stale: list[str] = []
    reached: list[str] = []
    for line in done.stdout.splitlines():
        m = re.match(r"\s*(\S+): (.+)$", line)
        if not m:
            continue
        name, status = m.group(1), m.group(2).strip()
        package = package_of(name)
        if package is None or (within is not None and name not in within):
            continue
        if name in accepted:
            if status in CAUGHT:  # an equivalent mutant can't be caught: its number names another mutant now
                stale.append(name)
            else:
                status = "equivalent"
        elif name in on_gpu_only:
            if status in CAUGHT:  # a CPU run reached it: not CUDA-only (or its number names another mutant now)
                reached.append(name)
            else:
                status = "cuda only"
        counts[package][status] += 1
        if status not in CAUGHT | {"equivalent", "not checked", "cuda only"}:
            survivors.append(f"{name}: {status}")
    kind = "a seeded random sample per package" if sampled else "every mutant"
    print(f"mutation score, {date.today()} (mutmut, tests covering each mutant; {kind})")
    print(f"{'package':<18} {'mutants':>7} {'killed':>7} {'timeout':>7} {'survived':>8} {'no tests':>8} "
          f"{'untested':>8} {'equiv.':>6} {'cuda':>5} {'score':>7}" + ("  95% interval" if sampled else ""))
    for package, c in counts.items():
        total = sum(c.values())
        if not total or c["not checked"] == total:  # not run yet (e.g. another package's --only run)
            continue
        caught = c["killed"] + c["timeout"]
        scored = total - c["equivalent"] - c["not checked"] - c["cuda only"]
        score = 100.0 * caught / max(1, scored)
        interval = "  {:.1f}-{:.1f}%".format(*wilson(caught, scored)) if sampled else ""
        print(f"{package:<18} {total:>7} {c['killed']:>7} {c['timeout']:>7} {c['survived']:>8} "
              f"{c['no tests']:>8} {c['not checked']:>8} {c['equivalent']:>6} {c['cuda only']:>5} {score:>6.1f}%{interval}")
    if stale:
        print(f"{len(stale)} entries of {EQUIVALENT.name} are caught by a test: the function changed since, so "
              "each number may name another mutant: look each up again\n  " + "\n  ".join(stale))
    if reached:
        print(f"{len(reached)} entries of {CUDA_ONLY.name} are caught without CUDA: a CPU run reaches them, so "
              "they are not CUDA-only (or the number names another mutant now)\n  " + "\n  ".join(reached))
    if survivors:
        path = ROOT / "mutants" / "survivors.txt"
        path.write_text("\n".join(survivors) + "\n")
        print(f"{len(survivors)} mutants not caught: {path} (`mutmut show NAME` prints one)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report-only", action="store_true", help="print the table of the last run")
    parser.add_argument("--only", choices=PACKAGES, action="append", help="mutate and test only this package")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--recheck", action="store_true",
                        help="re-test the mutants not caught last time (after adding tests)")
    parser.add_argument("--sample", type=int, default=0, metavar="N",
                        help="test a seeded random N mutants per package, not all (kept in mutants/sample.json)")
    args = parser.parse_args()
    packages = args.only or PACKAGES
    if args.recheck:
        recheck(args.only)
    sampled = None
    if args.sample and not args.report_only and not verdicts():
        # A fresh clone has no mutants to draw from yet: mutmut names them when it generates them, which
        # it does (with the one-off stats run) on any run. A tiny module's run does that.
        print("no mutants yet: generating them and the test stats (a run over burnlike.app.tree)")
        first = mutmut("run", "--max-children", str(args.max_children), "burnlike.app.tree.*")
        if first.returncode:
            return first.returncode
    if args.sample:
        sampled = draw_sample(args.sample, packages) if not args.report_only or not SAMPLE.exists() \
            else json.loads(SAMPLE.read_text())
    if not args.report_only:
        if sampled is not None:
            known = verdicts()
            names = [m for p in packages for m in sampled[p] if known.get(m) is None]
            print(f"{len(names)} of the sample's {sum(len(sampled[p]) for p in packages)} mutants to test")
            targets = names
        else:
            targets = [f"{p}.*" for p in args.only or []]
        if targets or sampled is None:
            run = mutmut("run", "--max-children", str(args.max_children), *targets)
            if run.returncode:
                return run.returncode
        check_slow_kills(args.only)
    return refuse_stale() or report(sampled)


if __name__ == "__main__":
    sys.exit(main())
