"""`scripts/mutation.py`: the mutation score's lists (accepted equivalents, slow-only, CUDA-only)
name mutants mutmut makes now; a name it no longer makes (its function changed, and mutmut numbered
the function's mutants afresh) is refused, naming the list's file and line."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KNOWN = ["burnlike.train.graph_step.xǁGraphStepǁ_capture__mutmut_1", "burnlike.record.format.registry.x_sniff__mutmut_2"]


def checkout(tmp_path: Path, equivalent: str, cuda: str, slow: str = "") -> Path:
    """A copy of the script beside its three lists, and a `mutants/` of mutmut's last generation
    holding the `KNOWN` mutants (no verdicts yet)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    shutil.copy(ROOT / "scripts" / "mutation.py", scripts)
    for name, text in (("equivalent", equivalent), ("cuda", cuda), ("slow", slow)):
        (scripts / f"mutation_{name}.txt").write_text(text)
    meta = tmp_path / "mutants" / "burnlike" / "train" / "graph_step.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": dict.fromkeys(KNOWN)}))
    return scripts / "mutation.py"


def test_a_listed_mutant_mutmut_no_longer_makes_is_refused_with_its_file_and_line(tmp_path):
    script = checkout(tmp_path, equivalent=f"# why each is equivalent\n{KNOWN[1]}  # a reason\n",
                      cuda=f"# header\n\n{KNOWN[0]}  # capture\n"
                           "burnlike.train.graph_step.xǁGraphStepǁ_capture__mutmut_84  # capture\n")
    run = subprocess.run([sys.executable, str(script), "--report-only"], cwd=tmp_path, capture_output=True,
                         text=True, check=False, timeout=120)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "scripts/mutation_cuda.txt:4: burnlike.train.graph_step.xǁGraphStepǁ_capture__mutmut_84: no such mutant",
        "1 listed mutants don't exist: each list must name mutants mutmut makes now",
    ]


def test_lists_naming_only_mutants_mutmut_makes_have_no_stale_entry(tmp_path):
    script = checkout(tmp_path, equivalent=f"{KNOWN[1]}  # a reason\n", cuda=f"{KNOWN[0]}  # capture\n",
                      slow=f"{KNOWN[1]}  tests/x.py::test_y  # a DDP run\n")
    spec = importlib.util.spec_from_file_location("mutation_copy", script)
    assert spec is not None and spec.loader is not None
    mutation = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mutation)  # the copy: its lists are the ones written above
    assert mutation.stale_entries(set(KNOWN)) == []
    assert mutation.stale_entries(set(KNOWN[:1])) == [
        f"scripts/mutation_equivalent.txt:1: {KNOWN[1]}: no such mutant",
        f"scripts/mutation_slow.txt:1: {KNOWN[1]}: no such mutant"]
