"""The Hydra app's groups-and-keys page (`hydra/keys.md`), generated at build time.

Every option is a YAML file under `burnlike/conf/<group>/`; every key, its type and its comment come
from the structured-config classes in `burnlike/app/schema.py` (and the `@config` classes they
extend: the comments on their fields), its default from Hydra composing `conf/config.yaml` with that
option, as `python train.py <group>=<option>` does. Nothing is written by hand here, so the page
lists what the app accepts today.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from comments import field_comment

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "burnlike" / "conf"
PRIMARY = CONF / "train.yaml"
APP_CONF = ROOT / "conf"

GROUP_NOTES = {
    "model": "The network (`_target_` in your own option builds your own model: [Hydra app](../hydra.md#your-own-model)).",
    "data": "What to train on and how it is batched.",
    "optimizer": "Burn's optimizer configs with Burn's defaults; `optimizer.lr` is the learning rate "
                 "(Burn passes it to `build()`; the app keeps it with the optimizer).",
    "scheduler": "The learning rate over the run, from `optimizer.lr`; no option keeps it constant "
                 "([Recipes](../recipes.md#warmup-then-cosine)).",
    "trainer": "The `lightning.Trainer` arguments the app sets; `trainer.extra.<name>=<value>` passes any "
               "other one through.",
    "learner": "Burn's `LearnerBuilder` settings.",
    "logger": "Experiment trackers; each gets the metric store's epoch values under Burn's names.",
    "hparams_search": "Sweeper configs (`@package _global_`: they set keys anywhere, and `hydra.mode: MULTIRUN`).",
    "debug": "Short runs to check the wiring (`@package _global_`).",
    "experiment": "Whole recipes, one file each choosing model, data, optimizer, schedule and learner "
                  "(`@package _global_`, as lightning-hydra-template's): [Recipes](../recipes.md).",
    "hydra/launcher": "Launchers for `-m` sweeps.",
}


# --- reading the sources --------------------------------------------------------------------------

def option_files() -> dict[str, list[Path]]:
    """Group -> its option files, every YAML under burnlike/conf but the primary config."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(CONF.rglob("*.yaml")):
        if path == PRIMARY:
            continue
        groups.setdefault(path.parent.relative_to(CONF).as_posix(), []).append(path)
    return groups


def primary_defaults() -> dict[str, str | None]:
    """Group -> its default option, from the primary config's defaults list."""
    result: dict[str, str | None] = {}
    for entry in yaml.safe_load(PRIMARY.read_text())["defaults"]:
        if isinstance(entry, dict):
            ((group, option),) = entry.items()
            result[group] = option
    return result


def header_comment(path: Path) -> str:
    """The option's leading comment lines as Markdown (Hydra's `# @package` line left out): prose
    lines joined, indented lines (commands) kept as a code block."""
    blocks: list[tuple[bool, list[str]]] = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line[1:]
        if text.strip().startswith("@package"):
            continue
        is_code = text.startswith("   ")
        if not blocks or blocks[-1][0] != is_code:
            blocks.append((is_code, []))
        blocks[-1][1].append(text if is_code else text.strip())
    out = []
    for is_code, lines in blocks:
        if is_code:
            out.append("```bash\n" + textwrap.dedent("\n".join(lines)) + "\n```")
        else:
            out.append(prose(" ".join(lines)))
    return "\n\n".join(out)


def is_global(path: Path) -> bool:
    return any(line.strip() == "# @package _global_" for line in path.read_text().splitlines()[:3])


def yaml_body(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text()) or {}
    data.pop("defaults", None)
    return data


def yaml_schema(path: Path) -> str | None:
    """`model/mnist` for an option whose defaults list pulls in `/schema/model/mnist@_here_`."""
    for entry in (yaml.safe_load(path.read_text()) or {}).get("defaults", []):
        if isinstance(entry, str) and entry.startswith("/schema/"):
            return entry[len("/schema/"):].split("@")[0]
    return None


def yaml_comments(path: Path) -> dict[str, str]:
    """Top-level `key: value  # comment` lines of an option file."""
    found = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z_][\w]*):[^#]*#\s*(.+)$", line)
        if m:
            found[m.group(1)] = m.group(2).strip()
    return found


def field_docs(cls: type) -> dict[str, tuple[str, str]]:
    """Field -> (type as written, comment), from the source of `cls` and its bases (the nearest
    class that writes a comment for the field wins): the comment lines right above a field and the
    one after it on its line."""
    docs: dict[str, tuple[str, str]] = {}
    for klass in cls.__mro__:
        if klass is object or not dataclasses.is_dataclass(klass):
            continue
        source = textwrap.dedent(inspect.getsource(klass))
        lines = source.splitlines()
        (node,) = ast.parse(source).body
        assert isinstance(node, ast.ClassDef)
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            name = stmt.target.id
            comment = field_comment(lines, stmt.lineno)
            type_text = ast.unparse(stmt.annotation)
            if name not in docs:
                docs[name] = (type_text, comment)
            elif not docs[name][1] and comment:
                docs[name] = (docs[name][0], comment)
    return docs


def nested_class(cls: type, name: str) -> type | None:
    """The config class a field's default holds (for `optimizer.aux_adamw.beta_1`)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            return type(value) if dataclasses.is_dataclass(value) else None
    return None


# --- composing ------------------------------------------------------------------------------------

def composed(overrides: list[str]) -> Any:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from burnlike.app.schema import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(APP_CONF), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=False, throw_on_missing=False)


# --- writing --------------------------------------------------------------------------------------

def fmt(value: Any) -> str:
    if isinstance(value, Enum):
        return value.name  # what an override spells: optimizer.line_search_fn=STRONG_WOLFE
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "required" if value == "???" else (value or "''")
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) + "}"
    return repr(value)


def prose(text: str) -> str:
    """Comment text for a table cell: `<`, `>` and `|` outside code spans escaped (the tables
    extension keeps a code span's `|` in its cell, and would show a backslash there)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
    return "`".join(parts)


def code(value: str) -> str:
    return "`" + value + "`" if "`" not in value else "``" + value + "``"


def key_rows(prefix: str, node: dict[str, Any], cls: type | None, notes: dict[str, str]) -> list[str]:
    docs = field_docs(cls) if cls is not None else {}
    rows = []
    for key, value in node.items():
        sub = nested_class(cls, key) if cls is not None else None
        if isinstance(value, dict) and value and sub is not None:
            rows.extend(key_rows(f"{prefix}{key}.", value, sub, {}))
            continue
        type_text, comment = docs.get(key, ("", ""))
        comment = notes.get(key, comment)
        if isinstance(value, Enum):
            choices = "one of " + ", ".join(m.name for m in type(value))
            comment = f"{comment}; {choices}" if comment else choices
        rows.append(f"| {code(prefix + key)} | {code(type_text) if type_text else ''} | {code(fmt(value))} "
                    f"| {prose(comment)} |")
    return rows


TABLE_HEAD = ["| key | type | default | comment |", "|---|---|---|---|"]


def schema_class(group: str, path: Path | None) -> type | None:
    from burnlike.app.schema import SCHEMAS, AppConfig

    name = yaml_schema(path) if path is not None else None
    if name is not None:
        return SCHEMAS[name]
    for f in dataclasses.fields(AppConfig):
        if f.name == group:
            return nested_class(AppConfig, group)
    return None


def markdown() -> str:
    from burnlike.app.schema import AppConfig

    groups = option_files()
    defaults = primary_defaults()
    base = composed([])
    out = [
        "# Config groups and keys",
        "",
        "<!-- generated by docs/hooks/hydra_keys.py from burnlike/app/schema.py and burnlike/conf/ -->",
        "",
        "This page is generated when the docs are built, from the config schema "
        "(`burnlike/app/schema.py`) and the option files in `burnlike/conf/`: every group option and "
        "every key, with the default the app composes and the comment the schema writes beside it. "
        "Pick an option with `group=option`, set a key with `group.key=value`; "
        "`python train.py --cfg job` prints the composed config, `python train.py --help` the same "
        "overview in a terminal.",
        "",
        "## Groups",
        "",
        "| group | options (default in bold) | what it sets |",
        "|---|---|---|",
    ]
    for group, paths in groups.items():
        default = defaults.get(group)
        names = [f"**{p.stem}**" if p.stem == default else p.stem for p in paths]
        out.append(f"| [`{group}`](#{group.replace('/', '')}) | {', '.join(names)} | {prose(GROUP_NOTES.get(group, ''))} |")
    out += ["", "Groups without a default (`hparams_search`, `debug`, `hydra/launcher`) are off unless named.", ""]

    for group, paths in groups.items():
        out += [f"## `{group}` {{ #{group.replace('/', '')} }}", ""]
        per_option = any(yaml_schema(p) for p in paths)
        cls = schema_class(group, None) if group in base and not per_option else None
        if cls is not None and cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
            out += [prose(" ".join(cls.__doc__.split())), ""]  # the schema's own words
        else:
            out += [prose(GROUP_NOTES.get(group, "")), ""]
        if group in base and not per_option:
            out += [f"Keys (schema `{cls.__name__ if cls else '?'}`), with the defaults of `{group}={defaults.get(group)}`:", ""]
            out += TABLE_HEAD + key_rows(f"{group}.", base[group], cls, {}) + [""]
        for path in paths:
            option = path.stem
            title = f"{group}={option}"
            out += [f"### `{title}` {{ #{group.replace('/', '')}-{option} }}", ""]
            comment = header_comment(path)
            if comment:
                out += [comment, ""]
            if group in base and per_option:
                node = composed([f"{group}={option}"])[group]
                cls = schema_class(group, path)
                out += [f"Schema `{cls.__name__ if cls else '?'}`. Keys:", ""]
                out += TABLE_HEAD + key_rows(f"{group}.", node, cls, yaml_comments(path)) + [""]
            elif group in base:
                body = yaml_body(path)
                if body:
                    sets = ", ".join(f"`{group}.{k}={fmt(v)}`" for k, v in body.items())
                    out += [f"Sets {sets}; every other key keeps the default above.", ""]
                else:
                    out += ["Changes no key: every key keeps the default above.", ""]
            else:
                text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("#"))
                out += ["```yaml", text.strip(), "```", ""]
    top = [f for f in dataclasses.fields(AppConfig) if f.name not in base or not isinstance(base[f.name], dict)]
    out += ["## Top-level keys", "", "Keys outside any group (schema `AppConfig`):", ""]
    out += TABLE_HEAD + key_rows("", {f.name: base[f.name] for f in top}, AppConfig, {}) + [""]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(markdown())
