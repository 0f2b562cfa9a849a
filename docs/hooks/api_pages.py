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
import re
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


# Hooks the framework calls, not the user: a layer's record layout for the record walker
# (`burn_record_fields`, explained in docs/burn.md), a config value's JSON as Burn's serde writes it
# (`serde_value`/`from_serde`, explained in burnlike/config.py), torch's `extra_repr`, and a
# recorder's format (how its bytes are written and parsed; its extension, gzip flag and Burn type
# name, `type_args` of it; a bytes recorder's file format), which is for the record package itself.
# The reference shows each class's user-facing members only.
FRAMEWORK_HOOKS = ("burn_record_fields", "serde_value", "from_serde", "extra_repr")
FORMAT_HOOKS = ("encode", "decode", "write", "read", "parse", "size_hint", "type_args", "extension", "gzip",
                "format_type", "format_name", "file_recorder", "format")


def filters(module: str) -> list[str]:
    """The member filters of an entry exported from `module`: mkdocs.yml's (`!^_`) and the hooks."""
    hidden = FRAMEWORK_HOOKS + (FORMAT_HOOKS if module == "burnlike.record" or module.startswith("burnlike.record.") else ())
    return ["!^_", f"!^({'|'.join(hidden)})$"]


def kept(name: str, module: str) -> bool:
    """Whether an entry exported from `module` shows its member `name` (every filter is a `!`)."""
    return not any(re.search(f[1:], name) for f in filters(module))


def is_hidden(cls: griffe.Class) -> bool:
    """A class the reference has no entry for: a private one, or one no `__all__` exports."""
    return cls.name.startswith("_") or cls.path not in RENDERED


def from_hidden_bases(cls: griffe.Class, module: str) -> list[str]:
    """The members `cls` inherits from bases the reference has no entry for (private ones such as
    `_Conv`'s `forward` or `_TransformerConfig`'s fields, or ones no `__all__` exports): the class's
    entry shows them as its own. Members inherited from a base with its own entry are there.
    (`build()` first: it lists the entries.)"""
    try:
        bases = cls.mro()
    except (ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return []
    names: dict[str, bool] = {}
    for base in bases:
        hidden = is_hidden(base)
        for name in base.members:
            if name not in cls.members and name not in names:
                # `__init__` too: its docstring's `Args:` merge into the class's entry
                names[name] = hidden and (name == "__init__" or kept(name, module))
    return [name for name, inherited in names.items() if inherited]


def _options(module: str, inherited: list[str] | None = None) -> str:
    listed = ", ".join(f'"{f}"' for f in filters(module))
    extra = f"      inherited_members: [{', '.join(repr(n) for n in inherited)}]\n" if inherited else ""
    return f"    options:\n      filters: [{listed}]\n" + extra


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


RENDERED: set[str] = set()  # the canonical paths of the reference's entries, filled by `build()`


def build() -> list[Page]:
    """Fill each page's sections; every exported name lands on exactly one page."""
    package = griffe.load("burnlike", search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    by_path = {m.path: m for m in _modules(package)}
    RENDERED.clear()
    for page in PAGES:
        for path in page.whole:
            RENDERED.update(member.path for member in by_path[path].members.values() if not member.is_alias)
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
    RENDERED.update(done)
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
                obj = by_path[path][name]
            except KeyError:
                out.append(_value_entry(path, name))
                continue
            target = obj.final_target if obj.is_alias else obj
            inherited = from_hidden_bases(target, path) if isinstance(target, griffe.Class) else []
            out.append(f"::: {path}.{name}\n" + _options(path, inherited))
    for path in page.whole:
        out.append(f"## `{path}`\n")
        out.append(f"::: {path}\n" + _options(path) + "      show_root_heading: false\n      heading_level: 3\n")
    return "\n".join(out)


def link_targets() -> dict[str, str]:
    """Inline code a guide may write -> the reference entry it links to (`build()` first): every
    entry's full path, and its bare name where that is a class's (capitalised) or a function's with
    an underscore (`load_weights`) and no other entry shares it. Plain words (`config`, `map`) stay
    text: they name keys and arguments as often as functions."""
    full: dict[str, str] = {}
    for page in PAGES:
        for module, names in page.sections:
            for name in names:
                full[f"{module}.{name}"] = f"{module}.{name}"
        full.update({path: path for path in RENDERED if any(path.startswith(m + ".") for m in page.whole)})
    bare: dict[str, list[str]] = {}
    for path in full:
        name = path.rsplit(".", 1)[1]
        if name[:1].isupper() or ("_" in name.strip("_") and name.islower()):
            bare.setdefault(name, []).append(path)
    return {**{name: paths[0] for name, paths in bare.items() if len(paths) == 1}, **full}


_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE = re.compile(r"`([A-Za-z_][\w.]*)`")


def link_names(markdown: str, targets: dict[str, str]) -> str:
    """A guide's first mention of each public name in inline code (`` `CompactRecorder` ``,
    `` `burnlike.record.load_weights` ``) becomes a link to its reference entry; code blocks,
    headings and code already inside a link are left as they are."""
    out, fenced, seen = [], False, set()
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or _FENCE.match(line) or line.lstrip().startswith("#"):
            out.append(line)
            continue
        pieces, last = [], 0
        for m in _CODE.finditer(line):
            before = line[:m.start()]
            in_link = before.count("[") > before.count("]") or line[m.end():m.end() + 1] in ("]", "(")
            target = targets.get(m.group(1))
            if target is None or target in seen or in_link or before.endswith("`"):
                continue
            seen.add(target)
            pieces += [line[last:m.start()], f"[{m.group(0)}][{target}]"]
            last = m.end()
        out.append("".join(pieces) + line[last:])
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
