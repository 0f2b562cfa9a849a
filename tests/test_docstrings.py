"""The API reference explains: every public name has a docstring, every parameter is described,
and the guides link into it.

"Public" is what the reference renders (docs/hooks/api_pages.py, read with griffe as mkdocstrings
reads it, with the same extension, docs/hooks/griffe_docstrings.py): every name of every `__all__`,
the public names of the modules rendered whole, the members of those classes that the entry's
filters keep (names without a leading `_`, less the framework's hooks), and the members a class
entry shows from bases without an entry of their own (`_Conv`'s `forward`).

The rules, as the reference renders docstrings (Google style):
- every function, class, module-level value, property and method has a docstring (an override
  without one shows its base's, and passes); an enum's members are exempt (the enum's docstring
  says what they mean);
- every parameter of a function or method, and of a class's `__init__`, is in an `Args:` section
  (of the class or of `__init__`: the reference merges the two), except `self`/`cls` and a
  `*args`/`**kwargs` the function only hands on to another call (`f(*args, **kwargs)`), whose own
  entry describes them; a `*args`/`**kwargs` the function reads itself is documented like any
  parameter. A dataclass or `@config` field is a parameter described by its comment (the Hydra
  keys page's convention), an attribute docstring, or an `Args:`/`Attributes:` entry; an instance
  attribute, by an attribute docstring or an `Attributes:` entry;
- no `Args:` entry names a parameter the signature lacks (a stale description).

`COVERED` lists the modules checked, by where a name is defined: `"burnlike.nn.*"` is the package and
everything under it, `"burnlike"` the top-level module alone. It holds the whole package.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe")

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "hooks"

COVERED = ("burnlike.*",)

VARIADIC = (griffe.ParameterKind.var_positional, griffe.ParameterKind.var_keyword)
SELF = ("self", "cls")


def covered(path: str) -> bool:
    """Whether the object at `path` (a dotted path) is defined in a module `COVERED` lists."""
    module = path.rsplit(".", 1)[0]
    return any(fnmatch.fnmatchcase(module, pattern) or module == pattern.removesuffix(".*") for pattern in COVERED)


def api_pages():  # type: ignore[no-untyped-def]
    if str(HOOKS) not in sys.path:
        sys.path.insert(0, str(HOOKS))
    import api_pages

    return api_pages


@functools.cache
def package() -> griffe.Module:
    extensions = griffe.load_extensions(str(HOOKS / "griffe_docstrings.py"))
    return griffe.load("burnlike", search_paths=[str(ROOT)], extensions=extensions, resolve_aliases=True,
                       resolve_external=False)


def rendered() -> dict[str, tuple[griffe.Object | None, str]]:
    """Canonical path -> (object, the module its entry is exported from), for every entry of the
    reference (None: a value griffe can't see, rendered by value)."""
    pages = api_pages()
    pages.build()
    modules = {m.path: m for m in _modules(package())}
    found: dict[str, tuple[griffe.Object | None, str]] = {}
    for module_path, names in pages.exported().items():
        for name in names:
            try:
                obj = modules[module_path][name]
            except KeyError:
                found[f"{module_path}.{name}"] = (None, module_path)
                continue
            target = obj.final_target if obj.is_alias else obj
            found.setdefault(target.path, (target, module_path))
    for page in pages.PAGES:
        for module_path in page.whole:
            for member in modules[module_path].members.values():
                if not member.is_alias and member.is_public and pages.kept(member.name, module_path):
                    found.setdefault(member.path, (member, module_path))
    return found


def _modules(module: griffe.Module) -> Iterator[griffe.Module]:
    yield module
    for sub in module.modules.values():
        yield from _modules(sub)


def sections(obj: griffe.Object) -> dict[str, set[str]]:
    """Section kind -> the names its entries describe, of `obj`'s parsed Google docstring."""
    out: dict[str, set[str]] = {}
    if obj.docstring is None:
        return out
    logging.getLogger("griffe").disabled = True  # parse warnings are this test's own findings
    try:
        parsed = obj.docstring.parse("google")
    finally:
        logging.getLogger("griffe").disabled = False
    for section in parsed:
        if isinstance(section.value, list):
            names = {getattr(item, "name", None) for item in section.value}
            out.setdefault(section.kind.value, set()).update(n.lstrip("*") for n in names if n)
    return out


def passed_through(function: griffe.Function, param: griffe.Parameter) -> bool:
    """`*args`/`**kwargs` handed on unchanged: the body passes `*name`/`**name` to a call."""
    star = "*" if param.kind is griffe.ParameterKind.var_positional else "**"
    return re.search(rf"\(.*(?<![*\w]){re.escape(star)}{param.name}\b", "\n".join(function.lines), re.S) is not None


def parameter_problems(where: str, function: griffe.Function, args: set[str], attributes: frozenset[str] = frozenset(),
                       fields: dict[str, griffe.Attribute] | None = None) -> list[str]:
    """`args`: the names `Args:` describes; `attributes`: those `Attributes:` describes (a dataclass
    field's description there counts for its parameter)."""
    problems = []
    signature = set()
    for param in function.parameters:
        signature.add(param.name)
        if param.name in SELF or param.name in args or param.name in attributes:
            continue
        if param.kind in VARIADIC and passed_through(function, param):
            continue
        field = (fields or {}).get(param.name)
        if field is not None and _has_docstring(field):
            continue
        if param.docstring is not None and param.docstring.value.strip():  # a base dataclass's field
            continue
        problems.append(f"{where}: parameter `{param.name}` is not described")
    for name in sorted(args - signature):
        problems.append(f"{where}: `Args:` describes `{name}`, which the signature lacks")
    return problems


def function_problems(where: str, function: griffe.Function) -> list[str]:
    if not _has_docstring(function):
        return [f"{where}: no docstring"]
    return parameter_problems(where, function, sections(function).get("parameters", set()))


def _has_docstring(obj: griffe.Object) -> bool:
    return obj.docstring is not None and bool(obj.docstring.value.strip())


def _is_enum(cls: griffe.Class) -> bool:
    try:
        return any(base.path in ("enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag")
                   for base in cls.mro()) or any(str(b) in ("Enum", "str, Enum", "enum.Enum") for b in cls.bases)
    except (ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return any("Enum" in str(b) for b in cls.bases)


def _hooks():  # type: ignore[no-untyped-def]
    api_pages()  # puts docs/hooks on sys.path
    import griffe_docstrings

    return griffe_docstrings


def _defining(cls: griffe.Class, name: str) -> griffe.Class | None:
    """The class of `cls`'s MRO that defines `name`."""
    for klass in [cls, *cls.mro()]:
        if name in klass.members:
            return klass
    return None


def init_problems(where: str, cls: griffe.Class) -> list[str]:
    """The parameters of `cls`'s `__init__` (its own, a hidden base's or the one `@config` or
    `@dataclass` gives it), described in `Args:` of the class or `__init__`, or as fields."""
    owner = _defining(cls, "__init__")
    if owner is None or owner.is_alias or (owner is not cls and not api_pages().is_hidden(owner)):
        return []  # object's, or a base's with its own entry: that entry describes it
    init = owner.members["__init__"]
    if not isinstance(init, griffe.Function):
        return []
    args: set[str] = set()
    attributes: set[str] = set()
    for klass in {cls, owner}:
        own = sections(klass)
        args |= own.get("parameters", set())
        attributes |= own.get("attributes", set())
    args |= sections(init).get("parameters", set())
    hooks = _hooks()
    fields = {f.name: f for klass in [cls, *cls.mro()] for f in hooks.fields(klass)} if hooks.has_fields(cls) else {}
    return parameter_problems(where, init, args, frozenset(attributes) if fields else frozenset(), fields)


def member_problems(where: str, cls: griffe.Class, member: griffe.Object, module: str,
                    described: frozenset[str]) -> list[str]:
    """One member of a class entry; `described`: the names an `Attributes:` section describes."""
    if isinstance(member, griffe.Function):
        return function_problems(where, member)
    if isinstance(member, griffe.Class):
        return class_problems(where, member, module)
    if isinstance(member, griffe.Attribute):
        if _is_enum(cls) and "property" not in member.labels:
            return []  # an enum member: the enum's docstring says what they mean
        if member.name in described or _has_docstring(member):
            return []
        return [f"{where}: no docstring"]
    return []


def class_problems(where: str, cls: griffe.Class, module: str) -> list[str]:
    """The class, its `__init__`'s parameters, and every member its entry shows: its own and those
    it gets from bases without an entry of their own (api_pages renders them as its own)."""
    pages = api_pages()
    problems = [] if _has_docstring(cls) else [f"{where}: no docstring"]
    problems += init_problems(where, cls)
    members = [(name, cls, member) for name, member in cls.members.items()]
    for name in pages.from_hidden_bases(cls, module):
        owner = _defining(cls, name)
        if owner is not None:
            members.append((name, owner, owner.members[name]))
    for name, owner, member in members:
        if member.is_alias or name == "__init__" or not pages.kept(name, module):
            continue
        described = frozenset(sections(owner).get("attributes", set()))
        here = f"{where}.{name}" if owner is cls else f"{owner.path}.{name}"  # once for its subclasses
        problems += member_problems(here, owner, member, module, described)
    return problems


def problems_of(path: str, obj: griffe.Object | None, module: str) -> list[str]:
    if obj is None:
        return [f"{path}: griffe can't see it (rendered by value, without a description)"]
    if isinstance(obj, griffe.Function):
        return function_problems(path, obj)
    if isinstance(obj, griffe.Class):
        return class_problems(path, obj, module)
    if isinstance(obj, griffe.Module):
        return [] if _has_docstring(obj) else [f"{path}: no docstring"]
    return [] if _has_docstring(obj) else [f"{path}: no docstring"]


def test_every_public_name_and_parameter_is_described():
    problems = []
    for path, (obj, module) in sorted(rendered().items()):
        if covered(path):
            problems += problems_of(path, obj, module)
    problems = list(dict.fromkeys(problems))
    assert not problems, f"{len(problems)} gaps in the API reference:\n" + "\n".join(problems)


# a measurement: a timing, a machine, a count of runs (docs/benchmarks.md holds those, with date and command)
LAB_NOTE = re.compile(r"\b\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?(?:ms|us|µs)\b|\b\d+\.\d+ s\b|\bVM\b"
                      r"|\binterleaved runs\b|\b\d+ of \d+ (?:saves|runs)\b")


def test_no_docstring_carries_benchmark_figures():
    """A docstring says why a piece of code is the way it is; the figures behind it live on
    docs/benchmarks.md with their date, machine and command."""
    import ast

    found = []
    for path in sorted((ROOT / "burnlike").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False) or ""
                found += [f"{path.relative_to(ROOT)} {getattr(node, 'name', '(module)')}: {m.group(0)!r}"
                          for m in LAB_NOTE.finditer(doc)]
    assert not found, "benchmark figures in docstrings (move them to docs/benchmarks.md):\n" + "\n".join(found)


def test_a_guide_links_its_first_mention_of_each_public_name_to_the_reference():
    pages = api_pages()
    pages.build()
    targets = pages.link_targets()
    guide = "\n".join([
        "## `CompactRecorder`",
        "Save with `CompactRecorder`; `CompactRecorder` again, [`Recorder`](records.md), the `config` key.",
        "```python",
        "`LearnerBuilder`",
        "```",
        "`burnlike.record.load_weights` or `load_weights`, and `NotAName`.",
    ])
    lines = pages.link_names(guide, targets).split("\n")
    assert lines[0] == "## `CompactRecorder`"  # headings keep their text
    assert lines[1] == ("Save with [`CompactRecorder`][burnlike.record.CompactRecorder]; `CompactRecorder` again, "
                        "[`Recorder`](records.md), the `config` key.")
    assert lines[3] == "`LearnerBuilder`"  # code blocks too
    assert lines[5] == ("[`burnlike.record.load_weights`][burnlike.record.load_weights] or `load_weights`, "
                        "and `NotAName`.")


def _shown_and_taken(cls: griffe.Class, runtime: type) -> tuple[list[tuple[str, str, bool]], list[tuple[str, str, bool]]]:
    """(name, kind, required) of each parameter: as the reference shows them, as the class takes them."""
    import inspect

    shown = [(p.name, p.kind.name.upper(), p.default is None) for p in cls.parameters if p.name != "self"]
    taken = [(p.name, p.kind.name, p.default is inspect.Parameter.empty)
             for p in inspect.signature(runtime).parameters.values()]
    return shown, taken


def test_a_config_class_shows_the_constructor_it_has():
    """griffe sees `@config` classes through docs/hooks/griffe_docstrings.py: the signature the
    reference shows is the one the class has at run time (names, order, keyword-only, required)."""
    import importlib

    hooks = _hooks()
    checked = 0
    for module in _modules(package()):
        for cls in module.classes.values():
            if cls.is_alias or not hooks._decorated(cls, ("burnlike.config.config",)):
                continue
            shown, taken = _shown_and_taken(cls, getattr(importlib.import_module(module.path), cls.name))
            assert shown == taken, f"{cls.path}: the reference shows {shown}, the class takes {taken}"
            checked += 1
    assert checked > 50


def test_a_config_signature_follows_burns_rule_for_required_fields(tmp_path, monkeypatch):
    """A required field after defaulted ones: the required are positional, in order; the defaulted
    ones before them keyword-only (`TrainingConfig(optimizer, seed, num_epochs=5)`)."""
    import importlib

    (tmp_path / "burn_rule.py").write_text(
        "from burnlike.config import config\n\n\n"
        "@config\n"
        "class TrainingConfig:\n"
        "    num_epochs: int = 10  # epochs\n"
        "    optimizer: str  # the optimizer's name\n"
        "    seed: int\n"
        "    log: str | None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = griffe.load("burn_rule", search_paths=[str(tmp_path)],
                         extensions=griffe.load_extensions(str(HOOKS / "griffe_docstrings.py")))
    shown, taken = _shown_and_taken(loaded["TrainingConfig"], importlib.import_module("burn_rule").TrainingConfig)
    assert shown == taken
    assert [name for name, kind, _ in shown if kind == "KEYWORD_ONLY"] == ["num_epochs"]
    assert loaded["TrainingConfig.optimizer"].docstring.value == "The optimizer's name"


def test_an_attribute_described_in_attributes_is_shown_there_only(tmp_path):
    """The reference shows a class's `Attributes:` table; the attributes it describes are not
    repeated as members of their own (one without a docstring would show as a bare name)."""
    (tmp_path / "described.py").write_text(
        'class Block:\n'
        '    """A block.\n\n'
        '    Attributes:\n'
        '        layer: The layer.\n'
        '    """\n\n'
        '    def __init__(self) -> None:\n'
        '        self.layer = 1\n'
        '        self.other = 2\n')
    loaded = griffe.load("described", search_paths=[str(tmp_path)],
                         extensions=griffe.load_extensions(str(HOOKS / "griffe_docstrings.py")))
    assert "layer" not in loaded["Block"].members and "other" in loaded["Block"].members
