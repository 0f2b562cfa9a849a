"""`@config`: Burn's `#[derive(Config)]` on a dataclass.

A config class is a plain dataclass, so Hydra/OmegaConf accept it as a structured config, plus Burn's
conveniences: `Cls.new(*required)`, `with_<field>(value)` copies, `save(path)`/`Cls.load(path)` as
pretty JSON in Burn's key order (required, then Option, then defaulted fields).

Burn's enums are serde's externally tagged JSON: a unit variant is its name (`"NoMax"`), a variant
with data a one-key object (`{"Norm": 1.0}`, `{"Fixed": 256}`). A class shaped like that in Python
(a dataclass, for Hydra) says so with two hooks, which `save`/`load` and nesting honour:
`serde_value(self)` gives the JSON value, `from_serde(cls, data)` builds from it (raising
ValueError/TypeError/KeyError for a value it doesn't take, reported as a ConfigError naming the key).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Union

from typing_extensions import dataclass_transform

if TYPE_CHECKING:  # pragma: no cover
    from burnlike.record.format.location import RemotePath

_T = TypeVar("_T")

_CONFIG_MARK = "__burnlike_config__"
BURNLIKE_ONLY = "burnlike_only"
"""A field's metadata key (`dataclasses.field(default=None, metadata={BURNLIKE_ONLY: True})`): a
burnlike setting Burn's config lacks, left out of the saved JSON while None so Burn reads the file."""


class ConfigError(ValueError):
    """A config file or dict does not match the config class (names the key and what was expected)."""


def is_config(obj: Any) -> bool:
    """Whether `obj` is a `@config` class or an instance of one (not merely a dataclass).

    Args:
        obj: Any value.
    """
    return dataclasses.is_dataclass(obj) and getattr(obj, _CONFIG_MARK, False)


def _is_optional(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def _strip_optional(tp: Any) -> Any:
    if _is_optional(tp):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else Union[tuple(args)]  # noqa: UP007
    return tp


@dataclass_transform()
def config(cls: type[_T]) -> type[_T]:
    """Turn `cls` into a Burn-style config dataclass.

    `Optional[...]` fields without a default get `None` (Burn's `Option` rule); defaults that are
    themselves configs become `default_factory` copies so instances never share state. A defaulted
    field declared before a required one becomes keyword-only, so the required fields are the
    constructor's positional arguments in declaration order, as Burn's `new` takes them.

    The class gets Burn's generated methods (where it doesn't define its own):
    `Cls.new(*required)`; `cfg.with_<field>(value)` and `cfg.with_(**changes)`, copies with fields
    changed; `cfg.save(path)` and `Cls.load(path)`, pretty JSON in Burn's key order (a local path
    or an fsspec URL; a bad file raises `ConfigError` naming the key); `cfg.to_dict()` and
    `Cls.from_dict(data)`, the same JSON values in memory.

    Args:
        cls: The class, its fields annotated as a dataclass's.

    Returns:
        `cls` itself, now a dataclass with those methods.
    """
    annotations = cls.__dict__.get("__annotations__", {})
    for name, tp in annotations.items():
        if name.startswith("_") or typing.get_origin(tp) is typing.ClassVar:
            continue
        default = cls.__dict__.get(name, dataclasses.MISSING)
        if default is dataclasses.MISSING:
            hint = tp if not isinstance(tp, str) else tp.replace(" ", "")
            if _is_optional(tp) or (isinstance(hint, str) and ("Optional[" in hint or "|None" in hint)):
                setattr(cls, name, None)
        elif is_config(default) or isinstance(default, (list, dict)):
            setattr(cls, name, dataclasses.field(default_factory=_copier(default)))
    _required_in_order(cls, annotations)
    setattr(cls, _CONFIG_MARK, True)
    methods: dict[str, object] = {"save": _save, "to_dict": _to_dict, "with_": _with}
    class_methods: dict[str, Callable[..., object]] = {"new": _new, "load": _load, "from_dict": _from_dict}
    for name, method in methods.items():
        if name not in cls.__dict__:
            setattr(cls, name, method)
    for name, factory in class_methods.items():
        if name not in cls.__dict__:
            setattr(cls, name, classmethod(factory))
    if "__getattr__" not in cls.__dict__:
        cls.__getattr__ = _getattr_with  # type: ignore[attr-defined]
    return dataclasses.dataclass(cls)


def _required_in_order(cls: type, annotations: dict[str, Any]) -> None:
    """Burn's rule: the required fields are `new`'s arguments in declaration order, wherever the
    defaulted ones sit. A defaulted field declared before a required one becomes keyword-only
    (`TrainingConfig(optimizer, num_epochs=5)`), which a dataclass otherwise refuses."""
    fields = [name for name, tp in annotations.items()
              if typing.get_origin(tp) is not typing.ClassVar and tp is not dataclasses.KW_ONLY
              and not (isinstance(tp, str) and tp.startswith(("ClassVar", "typing.ClassVar", "KW_ONLY",
                                                              "dataclasses.KW_ONLY")))]

    def required(name: str) -> bool:
        default = cls.__dict__.get(name, dataclasses.MISSING)
        if isinstance(default, dataclasses.Field):
            return default.default is dataclasses.MISSING and default.default_factory is dataclasses.MISSING
        return default is dataclasses.MISSING

    last = max((i for i, name in enumerate(fields) if required(name)), default=0)
    for name in fields[:last]:
        default = cls.__dict__.get(name, dataclasses.MISSING)
        if required(name):
            continue
        if isinstance(default, dataclasses.Field):
            default.kw_only = True
        else:
            setattr(cls, name, dataclasses.field(default=default, kw_only=True))


def _copier(value: Any) -> Any:
    import copy

    return lambda: copy.deepcopy(value)


def _new(cls: type[_T], *args: Any, **kwargs: Any) -> _T:
    return cls(*args, **kwargs)


def _with(self: Any, **changes: Any) -> Any:
    return dataclasses.replace(self, **changes)


def _getattr_with(self: Any, name: str) -> Any:
    # `cfg.with_lr(1e-3)` -> a copy with lr changed, like Burn's generated setters.
    if name.startswith("with_"):
        field = name[len("with_") :]
        if field in {f.name for f in dataclasses.fields(self)}:
            return lambda value: dataclasses.replace(self, **{field: value})
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _ordered_fields(cls: type) -> list[dataclasses.Field[Any]]:
    hints = typing.get_type_hints(cls)
    required, optional, defaulted = [], [], []
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f)
        elif _is_optional(hints.get(f.name)) and f.default is None:
            optional.append(f)
        else:
            defaulted.append(f)
    return required + optional + defaulted


def _to_plain(value: Any) -> Any:
    if not isinstance(value, type) and callable(getattr(value, "serde_value", None)):
        return value.serde_value()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_plain(getattr(value, f.name)) for f in _ordered_fields(type(value))
                if not (f.metadata.get(BURNLIKE_ONLY) and getattr(value, f.name) is None)}
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_plain(v) for k, v in value.items()}
    if hasattr(value, "value") and hasattr(type(value), "__members__"):  # Enum
        return value.value
    return value


def _to_dict(self: Any) -> dict[str, Any]:
    plain: dict[str, Any] = _to_plain(self)
    return plain


def _save(self: Any, path: str | Path | RemotePath) -> None:
    from burnlike.record.format.location import as_path  # (imports torch: only when saving)

    target = as_path(path)  # a local path or any fsspec URL (s3://…, memory://…)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(_to_plain(self), indent=2) + "\n")


def _load(cls: type[_T], path: str | Path | RemotePath) -> _T:
    from burnlike.record.format.location import as_path

    path = as_path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON ({e})") from None
    loaded: _T = _from_plain(cls, data, where=str(path))
    return loaded


def _from_dict(cls: type[_T], data: dict[str, Any]) -> _T:
    built: _T = _from_plain(cls, data, where=cls.__name__)
    return built


def _from_plain(tp: Any, data: Any, where: str, key: str = "") -> Any:
    base = _strip_optional(tp)
    if data is None:
        if _is_optional(tp) or tp is Any:
            return None
        raise ConfigError(f"{where}: key {key or '<root>'!r} is null but expects {_name(tp)}")
    from_serde = getattr(base, "from_serde", None) if isinstance(base, type) else None
    if callable(from_serde):
        try:
            return from_serde(data)
        except ConfigError as e:
            raise ConfigError(f"{where}: key {key or '<root>'!r}: {e}") from None
        except (ValueError, TypeError, KeyError) as e:
            raise ConfigError(f"{where}: key {key or '<root>'!r} expects {base.__name__} as Burn writes it "
                              f"(serde's enum JSON), got {data!r}: {e}") from None
    if isinstance(base, type) and issubclass(base, enum.Enum):
        try:
            return base(data)
        except ValueError:
            if isinstance(data, str) and data in base.__members__:  # a member's name (Burn's variant)
                return base[data]
            raise ConfigError(f"{where}: key {key!r} expects one of {[m.value for m in base]}, got {data!r}") from None
    if isinstance(base, type) and dataclasses.is_dataclass(base):
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: key {key or '<root>'!r} expects an object for {base.__name__}")
        hints = typing.get_type_hints(base)
        fields = {f.name: f for f in dataclasses.fields(base)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ConfigError(
                f"{where}: unknown key {_join(key, unknown[0])!r} for {base.__name__} "
                f"(expected one of: {', '.join(fields)})"
            )
        kwargs = {}
        for name, f in fields.items():
            if name in data:
                kwargs[name] = _from_plain(hints[name], data[name], where, _join(key, name))
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{where}: missing required key {_join(key, name)!r} ({_name(hints[name])})")
        return base(**kwargs)
    origin = typing.get_origin(base)
    if origin in (list, tuple, typing.Sequence):
        if not isinstance(data, list):
            raise ConfigError(f"{where}: key {key!r} expects a list, got {type(data).__name__}")
        args = typing.get_args(base) or (Any,)
        if origin is tuple and len(args) > 1 and args[1] is not Ellipsis:  # tuple[float, float, float]
            if len(data) != len(args):
                raise ConfigError(f"{where}: key {key!r} expects {len(args)} values, got {len(data)}")
            return tuple(_from_plain(tp, v, where, f"{key}[{i}]") for i, (tp, v) in enumerate(zip(args, data)))
        items = [_from_plain(args[0], v, where, f"{key}[{i}]") for i, v in enumerate(data)]
        return tuple(items) if origin is tuple else items
    if base is float and isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    if base in (int, str, bool) and not (isinstance(data, base) and not (base is int and isinstance(data, bool))):
        raise ConfigError(f"{where}: key {key!r} expects {base.__name__}, got {data!r}")
    return data


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))
