"""A griffe extension (mkdocs.yml's `extensions`, and tests/test_docstrings.py): config fields as the
API reference should show them.

- A `@config` class (`burnlike.config.config`, Burn's `#[derive(Config)]`) is a dataclass at run
  time, but griffe only knows `@dataclass`: here it gets the `__init__` the decorator gives it, so
  the reference shows `LinearConfig(d_input, d_output, bias=True, ...)`, Burn's rule included
  (a defaulted field declared before a required one is keyword-only; an `X | None` field without a
  default defaults to None).
- A field of a `@config` class or a dataclass is described by its comment, the lines right above it
  and the one after it on its line: the convention the Hydra keys page reads
  (docs/hooks/hydra_keys.py), so a field's description is written once and shows on both pages.
  An attribute docstring, where a field has one, wins.
- An attribute a class's `Attributes:` section describes is shown there, in its table, and not
  again as a member of its own (a layer's submodules: `conv1: 3×3 convolution, 1 → 8 channels`).
- A method or attribute that overrides a documented one of a base class, without a docstring of
  its own, shows the base's (as an IDE does): `AccuracyMetric.update` says what `Metric.update`
  says, where a copy would only repeat it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import griffe

sys.path.insert(0, str(Path(__file__).resolve().parent))  # mkdocstrings loads this file by path

from comments import field_comment  # noqa: E402

FIELD_DECORATORS = ("burnlike.config.config", "dataclasses.dataclass")


def _decorated(cls: griffe.Class, paths: tuple[str, ...]) -> bool:
    for decorator in cls.decorators:
        value = decorator.value
        if isinstance(value, griffe.ExprCall):
            value = value.function
        if isinstance(value, griffe.Expr) and value.canonical_path in paths:
            return True
    return False


def _lineage(cls: griffe.Class) -> list[griffe.Class]:
    """`cls` and its bases griffe can see, bases first (as a dataclass collects fields)."""
    try:
        bases = [base for base in cls.mro() if isinstance(base, griffe.Class)]
    except (ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        bases = []
    return [*reversed(bases), cls]


def has_fields(cls: griffe.Class) -> bool:
    """A dataclass or a `@config` class, or a subclass of one."""
    return any(_decorated(c, FIELD_DECORATORS) for c in _lineage(cls))


def fields(cls: griffe.Class) -> list[griffe.Attribute]:
    """The annotated instance attributes `cls` declares itself (its dataclass fields)."""
    found = []
    for member in cls.members.values():
        if member.is_alias or not isinstance(member, griffe.Attribute) or member.annotation is None:
            continue
        if member.name.startswith("_") or "property" in member.labels:
            continue
        if "class-attribute" in member.labels and "instance-attribute" not in member.labels:
            continue  # a ClassVar
        if isinstance(member.annotation, griffe.Expr) and member.annotation.canonical_path == "dataclasses.KW_ONLY":
            continue
        found.append(member)
    return found


def comment(attr: griffe.Attribute) -> str:
    """The comment lines right above `attr` and the one after it on its line, as one text."""
    lines = attr.lines_collection[attr.filepath] if isinstance(attr.filepath, Path) and attr.filepath in attr.lines_collection else None
    if not lines or attr.lineno is None:
        return ""
    return field_comment(lines, attr.lineno)


def sentence(text: str) -> str:
    """A comment as the reference shows it: its first word capitalised where it is a plain word
    (`the kernel's size` → `The kernel's size`; `d_model ...` and `` `x` ...`` stay)."""
    first = text.split(" ", 1)[0]
    return text[0].upper() + text[1:] if first.isalpha() and first.islower() else text


def _optional(annotation: Any) -> bool:
    text = str(annotation).replace(" ", "")
    return text.startswith("Optional[") or "|None" in text or text.startswith("None|")


def _default(field: griffe.Attribute) -> tuple[str | griffe.Expr | None, bool]:
    """A field's default as the signature shows it (`dataclasses.field(default=x)` is `x`, a
    `default_factory=f` is `f()`), and whether `field(kw_only=True)` makes it keyword-only."""
    value = field.value
    if not (isinstance(value, griffe.ExprCall) and isinstance(value.function, griffe.Expr)
            and value.function.canonical_path == "dataclasses.field"):
        return value, False
    arguments = {arg.name: arg.value for arg in value.arguments if isinstance(arg, griffe.ExprKeyword)}
    kw_only = str(arguments.get("kw_only", "")) == "True"
    if "default" in arguments:
        return arguments["default"], kw_only
    if "default_factory" in arguments:
        return griffe.ExprCall(function=arguments["default_factory"], arguments=[]), kw_only
    return None, kw_only


def _init(cls: griffe.Class) -> griffe.Function:
    """The `__init__` `@config` gives `cls`: the fields of its lineage in dataclass order, with
    Burn's rule (defaulted fields before the last required one are keyword-only)."""
    by_name: dict[str, griffe.Parameter] = {}
    for klass in _lineage(cls):
        if not _decorated(klass, FIELD_DECORATORS):
            continue
        declared = fields(klass)
        required = [f.value is None and not _optional(f.annotation) for f in declared]
        last = max((i for i, r in enumerate(required) if r), default=-1)
        for i, f in enumerate(declared):
            default, kw_only = _default(f)
            if default is None and not required[i]:
                default = "None"
            kind = (griffe.ParameterKind.keyword_only if kw_only or (i < last and not required[i])
                    else griffe.ParameterKind.positional_or_keyword)
            by_name[f.name] = griffe.Parameter(f.name, annotation=f.annotation, kind=kind, default=default,
                                               docstring=f.docstring)
    params = list(by_name.values())
    ordered = ([p for p in params if p.kind is not griffe.ParameterKind.keyword_only]
               + [p for p in params if p.kind is griffe.ParameterKind.keyword_only])
    self = griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)
    return griffe.Function("__init__", lineno=0, endlineno=0, parent=cls,
                           parameters=griffe.Parameters(self, *ordered), returns="None")


def _classes(obj: griffe.Module | griffe.Class) -> Any:
    for member in obj.members.values():
        if member.is_alias:
            continue
        if isinstance(member, (griffe.Module, griffe.Class)):
            if isinstance(member, griffe.Class):
                yield member
            yield from _classes(member)


def inherit_docstrings(cls: griffe.Class) -> None:
    """Give each member of `cls` without a docstring that of the nearest base member of its name."""
    try:
        bases = [base for base in cls.mro() if isinstance(base, griffe.Class)]
    except (ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return
    for name, member in cls.members.items():
        if member.is_alias or member.docstring is not None or name.startswith("__"):
            continue
        for base in bases:
            inherited = base.members.get(name)
            if inherited is not None and not inherited.is_alias and inherited.docstring is not None:
                member.docstring = griffe.Docstring(inherited.docstring.value, parent=member,
                                                    parser=inherited.docstring.parser,
                                                    parser_options=inherited.docstring.parser_options)
                break


def described_attributes(cls: griffe.Class) -> set[str]:
    """The names the `Attributes:` section of `cls`'s docstring describes."""
    if cls.docstring is None:
        return set()
    names: set[str] = set()
    for section in cls.docstring.parse("google"):
        if section.kind is griffe.DocstringSectionKind.attributes:
            names.update(item.name for item in section.value)
    return names


def drop_described(cls: griffe.Class) -> None:
    """Remove the attribute members without a docstring that `cls`'s `Attributes:` describes."""
    for name in described_attributes(cls):
        member = cls.members.get(name)
        if isinstance(member, griffe.Attribute) and not member.is_alias and member.docstring is None:
            cls.del_member(name)


class ConfigFields(griffe.Extension):
    """`@config` classes get their `__init__`; dataclass and config fields their comments as
    docstrings; overrides their base's docstring."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        loader = kwargs.get("loader")
        parser = getattr(loader, "docstring_parser", None)
        options = getattr(loader, "docstring_options", None)
        classes = list(_classes(pkg))
        for cls in classes:
            if not has_fields(cls):
                continue
            for f in fields(cls):
                if f.docstring is None:
                    text = comment(f)
                    if text:
                        f.docstring = griffe.Docstring(sentence(text), parent=f, parser=parser, parser_options=options)
            if "__init__" not in cls.members and _decorated(cls, ("burnlike.config.config",)):
                cls.set_member("__init__", _init(cls))
                cls.labels.add("dataclass")
        for cls in classes:
            drop_described(cls)
        for cls in classes:
            inherit_docstrings(cls)
