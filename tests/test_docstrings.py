"""The API reference explains: every public name has a docstring and every parameter is described.

"Public" is what the reference renders (docs/hooks/api_pages.py, read with griffe as mkdocstrings
reads it, with the same extension, docs/hooks/griffe_docstrings.py): every name of every `__all__`, the
public names of the modules rendered whole, and the members of those classes the page's filters keep
(names without a leading `_`, less the hooks a page leaves out).

The rules, as the reference renders docstrings (Google style):
- every function, class, module-level value, property and method has a docstring; an enum's
  members are exempt (the enum's docstring says what they mean);
- every parameter of a function or method, and of a class's `__init__`, is in an `Args:` section
  (of the class or of `__init__`: the reference merges the two), except `self`/`cls` and `*args`/
  `**kwargs` passed through unchanged to a callable the docstring names; a `*args`/`**kwargs` the
  function reads itself is documented like any parameter. A dataclass or `@config` field is a
  parameter described by its comment (the Hydra keys page's convention), an attribute docstring, or
  an `Args:`/`Attributes:` entry;
- no `Args:` entry names a parameter the signature lacks (a stale description).

`COVERED` lists the modules checked, by where a name is defined: `"burnlike.nn.*"` is the package and
everything under it, `"burnlike"` the top-level module alone. Adding a package is one line.
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
import yaml

griffe = pytest.importorskip("griffe")

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "hooks"

COVERED = (
    "burnlike",
    "burnlike.autodiff",
    "burnlike.config",
    "burnlike.module",
    "burnlike.models.cnn",
    "burnlike.models.mlp",
    "burnlike.models.mnist",
    "burnlike.models.tabular",
    "burnlike.nn.*",
    "burnlike.record.error",
    "burnlike.record.format.*",
    "burnlike.record.tensor.*",
    "burnlike.train.metric.*",
    "burnlike.train.output",
    "burnlike.train.step",
    "burnlike.vision.*",
)

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


def global_filters() -> list[str]:
    """The member filters mkdocs.yml gives every entry."""
    text = (ROOT / "mkdocs.yml").read_text()
    config = yaml.load(text, Loader=yaml.BaseLoader)  # BaseLoader: mkdocs.yml may hold !!python tags
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            return list(plugin["mkdocstrings"]["handlers"]["python"]["options"]["filters"])
    raise AssertionError("mkdocs.yml has no mkdocstrings options")


def shown(name: str, filters: list[str]) -> bool:
    """mkdocstrings' rule: a member is kept unless a `!pattern` matches or no plain pattern does."""
    keep = None
    for pattern in filters:
        negative = pattern.startswith("!")
        if re.search(pattern[1:] if negative else pattern, name):
            keep = not negative
        elif not negative and keep is None:
            keep = False
    return keep is not False


def rendered() -> dict[str, tuple[griffe.Object, list[str]]]:
    """Canonical path -> (object, the member filters of its entry), for every entry of the reference."""
    pages = api_pages()
    pkg = package()
    modules = {m.path: m for m in _modules(pkg)}
    base = global_filters()
    found: dict[str, tuple[griffe.Object, list[str]]] = {}
    for module_path, names in pages.exported().items():
        for name in names:
            try:
                obj = modules[module_path][name]
            except KeyError:
                found[f"{module_path}.{name}"] = (None, base)  # rendered by value: no docstring possible
                continue
            target = obj.final_target if obj.is_alias else obj
            found.setdefault(target.path, (target, base + pages.entry_filters(module_path)))
    for page in pages.PAGES:
        for module_path in page.whole:
            for member in modules[module_path].members.values():
                if not member.is_alias and member.is_public and shown(member.name, base):
                    found.setdefault(member.path, (member, base + pages.entry_filters(module_path)))
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
                   for base in cls.mro()) or any(str(b) in ("Enum", "str, Enum") for b in cls.bases)
    except (ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return any("Enum" in str(b) for b in cls.bases)


def class_problems(where: str, cls: griffe.Class, filters: list[str]) -> list[str]:
    sys.path.insert(0, str(HOOKS))
    try:
        import griffe_docstrings
    finally:
        sys.path.remove(str(HOOKS))
    problems = [] if _has_docstring(cls) else [f"{where}: no docstring"]
    own = sections(cls)
    args = own.get("parameters", set())
    attributes = frozenset(own.get("attributes", set()))
    init = cls.members.get("__init__")
    if isinstance(init, griffe.Function):
        args |= sections(init).get("parameters", set())
    fields = {f.name: f for f in griffe_docstrings.fields(cls)} if griffe_docstrings.has_fields(cls) else {}
    if isinstance(init, griffe.Function) and not init.is_alias:
        problems += parameter_problems(where, init, args, attributes if fields else frozenset(), fields)
    elif cls.parameters:  # an inherited __init__: its own class documents it
        pass
    enum = _is_enum(cls)
    for name, member in cls.members.items():
        if member.is_alias or not shown(name, filters) or name == "__init__":
            continue
        here = f"{where}.{name}"
        if isinstance(member, griffe.Function):
            problems += function_problems(here, member)
        elif isinstance(member, griffe.Class):
            problems += class_problems(here, member, filters)
        elif isinstance(member, griffe.Attribute):
            if enum and "property" not in member.labels:
                continue
            if name in fields or name in attributes:
                continue  # a field: checked as a parameter; or described in `Attributes:`
            if not _has_docstring(member):
                problems.append(f"{here}: no docstring")
    return problems


def problems_of(path: str, obj: griffe.Object | None, filters: list[str]) -> list[str]:
    if obj is None:
        return [f"{path}: griffe can't see it (rendered by value, without a description)"]
    if isinstance(obj, griffe.Function):
        return function_problems(path, obj)
    if isinstance(obj, griffe.Class):
        return class_problems(path, obj, filters)
    if isinstance(obj, griffe.Module):
        return [] if _has_docstring(obj) else [f"{path}: no docstring"]
    return [] if _has_docstring(obj) else [f"{path}: no docstring"]


def test_every_public_name_and_parameter_is_described():
    problems = []
    for path, (obj, filters) in sorted(rendered().items()):
        if covered(path):
            problems += problems_of(path, obj, filters)
    assert not problems, f"{len(problems)} gaps in the API reference:\n" + "\n".join(problems)
