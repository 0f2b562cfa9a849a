"""The API reference pages, generated at build time from the package's `__all__` lists.

Every module of `burnlike` that defines `__all__` is read with griffe (as mkdocstrings reads it, no
import) and each exported name gets one `::: path` entry on the page of its area. A name exported
from several modules (`burnlike.data.Dataset` and `burnlike.data.dataset.Dataset`) is rendered once,
where it is exported first (the shortest module path). A module that defines `__all__` but has no
page below fails the build, so a new public module can't go undocumented. Modules without `__all__`
that users import (`burnlike.config`, `burnlike.module`, `burnlike.models.*`) are rendered whole.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Page:
    file: str  # under docs/
    title: str
    prefix: str  # modules whose path is this or starts with it + "." (the longest prefix wins)
    intro: str
    whole: list[str] = field(default_factory=list)  # modules without __all__ rendered whole
    sections: list[tuple[str, list[str]]] = field(default_factory=list)  # (module, names) filled in


PAGES = [
    Page("reference/burnlike.md", "burnlike", "burnlike",
         "The top level stays light (no torch import) so `train.py --help` starts fast; import the "
         "pieces from their Burn-named modules."),
    Page("reference/train.md", "burnlike.train", "burnlike.train",
         "Burn's `burn::train`: steps, outputs, `LearnerBuilder` → `Learner` and 0.20's "
         "`SupervisedTraining`, strategies, checkpointing and early stopping, the evaluator. Names are "
         "resolved lazily: `burnlike.train.step` and `output` import without Lightning."),
    Page("reference/metric.md", "burnlike.train.metric", "burnlike.train.metric",
         "Burn's metrics (names, units, `value,count` semantics) over torchmetrics."),
    Page("reference/record.md", "burnlike.record", "burnlike.record",
         "Burn's recorders and file formats, the Lightning checkpoint plugin, safe loading."),
    Page("reference/optim.md", "burnlike.optim", "burnlike.optim",
         "Optimizer and learning-rate scheduler configs with Burn's names and defaults, gradients for "
         "custom loops."),
    Page("reference/data.md", "burnlike.data", "burnlike.data",
         "Batchers, `DataLoaderBuilder`, MNIST, images, text and tables."),
    Page("reference/dataset.md", "burnlike.data.dataset", "burnlike.data.dataset",
         "Burn's `burn::data::dataset`: the `Dataset` protocol, sources and transforms."),
    Page("reference/nn.md", "burnlike.nn", "burnlike.nn",
         "Burn's `burn::nn`: layer configs whose `init(device)` returns a torch module with Burn's "
         "defaults, numbers and record; attention masks; loss configs."),
    Page("reference/config.md", "burnlike.config and burnlike.module", "burnlike.config",
         "`@config` (Burn's `#[derive(Config)]`) and the `Module` mixin, Burn's `Module` trait "
         "(`save_file`, `load_file`, `map`, `visit`, `valid`, `num_params`, ...).",
         whole=["burnlike.config", "burnlike.module"]),
    Page("reference/vision.md", "burnlike.vision", "burnlike.vision",
         "Burn's `burn::vision`: `Transform2D`, the affine resampling Burn's mnist example augments with."),
    Page("reference/models.md", "burnlike.models", "burnlike.models",
         "Ready models: the guide's MNIST model and the app's other model options.",
         whole=["burnlike.models.mnist", "burnlike.models.mlp", "burnlike.models.cnn", "burnlike.models.tabular"]),
    Page("reference/app.md", "burnlike.app", "burnlike.app",
         "The Hydra app's importable pieces, for another repo's entry point "
         "([Hydra app](../hydra.md))."),
]


# A recorder's format hooks (how its bytes are written and parsed, `type_args` of its Burn type name) are
# for the record package itself: the reference shows a recorder's user-facing methods only.
FORMAT_HOOKS = ("encode", "decode", "write", "read", "parse", "size_hint", "type_args")
RECORD_OPTIONS = f'    options:\n      filters: ["!^_", "!^({"|".join(FORMAT_HOOKS)})$"]\n'


def _modules(module: griffe.Module):  # type: ignore[no-untyped-def]
    yield module
    for sub in module.modules.values():
        yield from _modules(sub)


def _page_for(path: str) -> Page:
    best: Page | None = None
    for page in PAGES:
        if page.prefix == "burnlike":
            matches = path == "burnlike"
        else:
            matches = path == page.prefix or path.startswith(page.prefix + ".")
        if matches and (best is None or len(page.prefix) > len(best.prefix)):
            best = page
    if best is None:
        raise RuntimeError(f"{path} defines __all__ but no API reference page takes it: add one in {__file__}")
    return best


def exported() -> dict[str, list[str]]:
    """Module path -> its `__all__` names, for every module of burnlike that defines one (read from
    the source with ast, so the list is exactly what the files say)."""
    result: dict[str, list[str]] = {}
    for file in sorted((ROOT / "burnlike").rglob("*.py")):
        parts = file.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        for node in ast.parse(file.read_text()).body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                result[".".join(parts)] = list(ast.literal_eval(node.value))
    return result


def build() -> list[Page]:
    """Fill each page's sections; every exported name lands on exactly one page."""
    package = griffe.load("burnlike", search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    by_path = {m.path: m for m in _modules(package)}
    for page in PAGES:
        page.sections = []
    done: set[str] = set()
    for path, names in sorted(exported().items(), key=lambda kv: (kv[0].count("."), kv[0])):
        module = by_path[path]
        fresh = []
        for name in names:
            try:
                canonical = module[name].canonical_path
            except KeyError:  # griffe can't see it (a tuple-unpacking assignment): rendered by value
                canonical = f"{path}.{name}"
            if canonical not in done:
                done.add(canonical)
                fresh.append(name)
        if fresh:
            _page_for(path).sections.append((path, fresh))
    return PAGES


def _value_entry(module: str, name: str) -> str:
    value = getattr(importlib.import_module(module), name)
    return f"### `{name}` {{ #{module}.{name} }}\n\n```python\n{name} = {value!r}\n```\n"


def markdown(page: Page) -> str:
    package = griffe.load("burnlike", search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    by_path = {m.path: m for m in _modules(package)}
    out = [f"# `{page.title}`\n", "<!-- generated from the package's __all__ lists by docs/hooks/api_pages.py -->\n",
           page.intro + "\n"]
    for path, names in page.sections:
        out.append(f"## `{path}`\n")
        for name in names:
            try:
                by_path[path][name]
            except KeyError:
                out.append(_value_entry(path, name))
                continue
            out.append(f"::: {path}.{name}\n" + (RECORD_OPTIONS if path.startswith("burnlike.record") else ""))
    for path in page.whole:
        out.append(f"## `{path}`\n")
        out.append(f"::: {path}\n    options:\n      show_root_heading: false\n      heading_level: 3\n")
    return "\n".join(out)


def enum_table() -> str:
    """A Markdown table of every public enum (a name in an `__all__` that is an `Enum`), its members
    and their other spellings (aliases), read from the code as it is."""
    import enum

    rows = ["| enum | members (other spellings of the same member) | reference |", "|---|---|---|"]
    seen: set[int] = set()
    for path, names in sorted(exported().items(), key=lambda kv: (kv[0].count("."), kv[0])):
        module = importlib.import_module(path)
        for name in names:
            obj = getattr(module, name)
            if not (isinstance(obj, type) and issubclass(obj, enum.Enum)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            spellings: dict[str, list[str]] = {}
            for member_name, member in obj.__members__.items():
                spellings.setdefault(member.name, []).append(member_name)
            cells = []
            for canonical, all_names in spellings.items():
                others = [n for n in all_names if n != canonical]
                cells.append(f"`{name}.{canonical}`" + (f" ({', '.join(f'`{n}`' for n in others)})" if others else ""))
            link = f"[`{path}`]({_page_for(path).file}#{path}.{name})"
            rows.append(f"| `{name}` | {', '.join(cells)} | {link} |")
    return "\n".join(rows) + "\n"
