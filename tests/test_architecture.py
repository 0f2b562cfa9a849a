"""The package's import graph, read statically from burnlike's sources (every import statement,
function-local and TYPE_CHECKING ones too): no import cycles, and `burnlike.record`'s layers
(`burnlike.record.LAYERS`) import only downward. The checker itself is tested on a package written
here. And at run time: inspecting a file or loading weights never imports Lightning, which takes
seconds to import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import burnlike
from burnlike.record import LAYERS, DefaultRecorder
from tests.helpers.records import saved_checkpoint

PACKAGE_DIR = Path(burnlike.__file__).parent


def modules(root: Path, package: str) -> dict[str, Path]:
    """Module name -> file, for every .py file below `root` (a package's `__init__.py` is the package)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement: module level, inside functions, under TYPE_CHECKING."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """`name` or its nearest ancestor that is one of `known` (an attribute path ends at its module)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of `package` it imports."""
    known = modules(root, package)
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in imports(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: from the module's own package
                    anchor = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in targets:
                resolved = _resolve(target, known) if target.split(".")[0] == package else None
                if resolved is not None and resolved != name:
                    edges[name].add(resolved)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return [_cycle_in(set(c), edges) for c in components]


def _cycle_in(component: set[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest cycle through the component's first module, as a path `a -> b -> ... -> a`."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & component):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError("a strongly connected component always has a cycle")  # pragma: no cover


def layer_of(module: str) -> int | None:
    """The record layer a module belongs to (0 = lowest); `burnlike.record` itself is above them all."""
    if module == "burnlike.record":
        return len(LAYERS)
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


EDGES = graph(PACKAGE_DIR, "burnlike")  # module -> the burnlike modules it imports


# The checker itself, on a package written here: what it must see and what it must not.
FAKE = {
    "__init__.py": "from pkg.a import A\n",
    "a.py": "from pkg import b\nA = 1\n",
    "b.py": "def f():\n    from pkg.c import C  # function-local: counted\n",
    "c.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import f  # types only: counted\n"
             "else:\n    import os\nC = 1\n"),
    "d.py": "from . import c\nfrom .sub import e\nimport pkg.sub.e as alias\n",
    "sub/__init__.py": "",
    "sub/e.py": "from .. import d  # closes d -> e -> d\nfrom pkg.a import A as B\n",
}


@pytest.fixture
def fake_graph(tmp_path: Path) -> dict[str, set[str]]:
    """The import graph the checker reads from FAKE, written under tmp_path as package `pkg`."""
    for name, text in FAKE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return graph(tmp_path, "pkg")


# --- the checker ---------------------------------------------------------------------------------------
def test_the_checker_reads_local_relative_and_submodule_imports(fake_graph):
    assert fake_graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.b"},
                    "pkg.d": {"pkg.c", "pkg.sub.e"}, "pkg.sub": set(), "pkg.sub.e": {"pkg.d", "pkg.a"}}
    assert sorted(cycles(fake_graph)) == [["pkg.b", "pkg.c", "pkg.b"], ["pkg.d", "pkg.sub.e", "pkg.d"]]


# --- burnlike's import graph ----------------------------------------------------------------------------
def test_burnlike_has_no_import_cycles():
    found = cycles(EDGES)
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_every_record_module_is_in_a_layer():
    undeclared = [m for m in EDGES if m.startswith("burnlike.record.") and layer_of(m) is None]
    assert not undeclared, f"declare these in burnlike.record.LAYERS: {undeclared}"


def test_record_layers_import_only_downward():
    upward = [f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
              for a, targets in EDGES.items() for b in sorted(targets)
              if a.startswith("burnlike.record") and b.startswith("burnlike.record")
              and layer_of(a) is not None and layer_of(b) is not None and layer_of(b) > layer_of(a)]
    assert not upward, "record layers import upward:\n" + "\n".join(upward)


# --- imports at run time ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_inspect_and_checkpoint_weights_never_import_lightning(tmp_path):
    """Lightning takes seconds to import; looking at a file or loading weights shouldn't pay it."""
    net = torch.nn.Linear(4, 5)
    ckpt = saved_checkpoint(tmp_path, net)
    record = DefaultRecorder().save_module(net, tmp_path / "m")
    code = (f"import sys, torch\nfrom burnlike.cli import main\n"
            f"assert main(['inspect', {str(ckpt)!r}]) == 0 and main(['inspect', {str(record)!r}]) == 0\n"
            f"from burnlike.record import DefaultRecorder, load_checkpoint, load_weights\n"
            f"load_weights(torch.nn.Linear(4, 5), {str(ckpt)!r}, DefaultRecorder())\n"
            f"assert load_checkpoint({str(ckpt)!r})['state_dict']['model.weight'].shape == (5, 4)\n"
            f"print('lightning imported:', 'lightning' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "kind: burnlike training checkpoint" in out.stdout
    assert out.stdout.strip().endswith("lightning imported: False")
