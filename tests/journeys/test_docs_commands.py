"""README.md and docs/: every command runs as written, and the generated pages cover the code.

Blocks marked runnable (a `<!-- runnable -->` line right before a ```bash or ```python fence) run in
order, page by page (a block after `<!-- file: path -->` is written to that path first, as the page
has the reader do), in a scratch folder laid out like a checkout (train.py, conf/, examples/), with
the venv's `python` and `burnlike` first on PATH and BURNLIKE_DATA at tiny MNIST files
(tests/helpers/idx.py). The other shell blocks need a GPU, a cluster, a cloud account or data the
reader has; their commands are checked without running them: `train.py` overrides go through the
app's key check, are composed by Hydra (every job of a `-m` sweep) and validated as the app
validates them; `burnlike` commands are parsed by the CLI's parser; `make` targets must be in the
Makefile, pip extras in pyproject.toml; scripts must exist and take the options given. Python
blocks that don't run are compiled and their burnlike imports resolved, and inline code such as
`Split.VALID` must name a member that exists. The generated Hydra keys page (docs/hooks/hydra_keys.py)
must list every option in burnlike/conf/ and every key, each with a description; the API reference
(docs/hooks/api_pages.py) every name in the package's `__all__` lists.

Sample outputs are transcripts (a `<!-- transcript -->` line before a ```text fence: `$ command` lines,
each followed by what it prints, `...` for lines left out): each command runs, and what it prints must
match, number for number, or in shape only under `<!-- transcript: numbers vary -->` (the page shows
a full-MNIST run; the test runs on tiny MNIST). The lists that several places repeat agree: the
extras (Makefile, README, getting-started, the installation page, pyproject.toml) and the config
groups (`burnlike/conf/`, `train.py --help`, the keys page, README, hydra.md). Links between the
Markdown files resolve in the repository too, not only in the built site.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.version import Version

from tests.helpers.idx import write_mnist_idx
from tests.helpers.paths import REPO

MARKER = "<!-- runnable -->"
SHELL = {"bash", "sh", "shell"}
PAGES = [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md") if "hooks" not in p.parts)]
HOOKS = REPO / "docs" / "hooks"

# The docs, not burnlike's behaviour: mutation runs leave the whole file out (under mutmut, griffe
# would parse the trampolined sources of every mutant)
pytestmark = pytest.mark.slow


@dataclass
class Block:
    page: str
    line: int
    lang: str
    text: str
    runnable: bool
    file: str | None = None  # `<!-- file: path -->` before the fence: the block is that file's content

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.lang})"


def blocks(text: str, page: str) -> list[Block]:
    """The fenced blocks of a Markdown page (indented ones in lists too), with their runnable mark."""
    found = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)", lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        body = textwrap.dedent("\n".join(line[len(indent):] if line.startswith(indent) else line
                                         for line in lines[i + 1:j]))
        previous = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        file = re.match(r"^<!-- file: (\S+) -->$", previous)
        found.append(Block(page, i + 1, lang, body, previous == MARKER, file.group(1) if file else None))
        i = j + 1
    return found


def page_blocks(path: Path) -> list[Block]:
    return blocks(path.read_text(), str(path.relative_to(REPO)))


def load_hook(name: str):
    """A module of docs/hooks (they import each other by name, as mkdocs loads them)."""
    if str(HOOKS) not in sys.path:
        sys.path.insert(0, str(HOOKS))
    return importlib.import_module(name)


@functools.cache
def generated_keys_page() -> str:
    """The page the docs build generates; Hydra's global state (the `conf` fixture's) is put back after."""
    from hydra.core.global_hydra import GlobalHydra

    saved = GlobalHydra.instance().hydra if GlobalHydra.instance().is_initialized() else None
    GlobalHydra.instance().clear()
    try:
        return load_hook("hydra_keys").markdown()
    finally:
        GlobalHydra.instance().clear()
        if saved is not None:
            GlobalHydra.instance().initialize(saved)


# --- the marks themselves ---------------------------------------------------------------------------

def test_every_runnable_mark_sits_on_a_shell_or_python_fence():
    for path in PAGES:
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            if line.strip() != MARKER:
                continue
            following = next((rest for rest in lines[n + 1:] if rest.strip()), "")
            lang = following.strip()[3:].strip().lower() if following.strip().startswith("```") else None
            assert lang in SHELL | {"python"}, f"{path.name}:{n + 1}: {MARKER} must precede a bash or python fence"


def test_readme_is_a_front_page():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert not re.search(r"\bsessions?\b", text, re.IGNORECASE)
    assert any(b.runnable for b in page_blocks(REPO / "README.md"))


# --- runnable blocks ----------------------------------------------------------------------------------

RUNNABLE_PAGES = [p for p in PAGES if any(b.runnable for b in page_blocks(p))]


@pytest.fixture(scope="module")
def tiny_mnist(tmp_path_factory):
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=256, n_test=128)


def checkout(where: Path) -> Path:
    """A folder laid out like the repository root, as the docs' commands expect it."""
    where.mkdir()
    shutil.copy(REPO / "train.py", where / "train.py")
    for folder in ("conf", "examples"):
        shutil.copytree(REPO / folder, where / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return where


@pytest.fixture(scope="module")
def housing(tmp_path_factory):
    """A local stand-in for the Hub's California housing (its columns and splits, 600 seeded rows), for
    the ported Burn example (how-to/port-a-burn-project.md reads it from HOUSING_DATASET)."""
    try:
        import datasets
    except ImportError:  # the huggingface extra is absent: that page's blocks fail, the others run
        return None
    import random

    rng = random.Random(0)
    columns = ["MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude"]

    def split(n):
        rows = {c: [rng.uniform(0, 10) for _ in range(n)] for c in columns}
        rows["MedHouseVal"] = [0.4 * i + rng.gauss(0, 0.1) for i in rows["MedInc"]]
        return datasets.Dataset.from_dict(rows)

    folder = tmp_path_factory.mktemp("housing") / "california_housing"
    datasets.DatasetDict({"train": split(400), "validation": split(100), "test": split(100)}).save_to_disk(folder)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_runnable_blocks_run_as_written(page, tiny_mnist, housing, tmp_path):
    cwd = checkout(tmp_path / "checkout")
    env = {**os.environ, "BURNLIKE_DATA": str(tiny_mnist), "CUDA_VISIBLE_DEVICES": "",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           **({"HOUSING_DATASET": str(housing)} if housing else {})}
    for block in page_blocks(page):
        if block.file is not None:  # a file the page has the reader write, for the blocks after it
            (cwd / block.file).parent.mkdir(parents=True, exist_ok=True)
            (cwd / block.file).write_text(block.text + "\n")
        if not block.runnable:
            continue
        if block.lang in SHELL:
            cmd = ["bash", "-euo", "pipefail", "-c", block.text]
        else:
            cmd = [sys.executable, "-c", block.text]
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (f"{block} exited {done.returncode}\n--- block\n{block.text}\n--- stdout\n"
                                      f"{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")


# --- shown commands: checked without running them -------------------------------------------------------

ALLOWED = {"cd", "ls", ".", "source", "export", "sbatch", "tensorboard", "mlflow", "git", "cat", "pytest", "kill", "wait"}
SEPARATORS = {"&&", "||", ";", "|"}


def commands(text: str) -> list[list[str]]:
    """Each command of a shell block as argv: continuation lines joined, comments dropped, chains and
    pipes split, `VAR=value` prefixes left out."""
    joined = re.sub(r"\\\n", " ", text)
    result = []
    for line in joined.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        for token in lexer:
            if token in SEPARATORS:
                result.append(current)
                current = []
            else:
                current.append(token)
        result.append(current)
    cleaned = []
    for argv in result:
        while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
            argv = argv[1:]
        if argv:
            cleaned.append(argv)
    return cleaned


@pytest.fixture(scope="module")
def compose_job(conf):
    """`compose_job(overrides)`: the composed config of one job, resolved, checked by the app's `validate`."""
    from omegaconf import OmegaConf

    from burnlike.app.run import AppConfigError, validate

    def check(overrides: list[str]) -> None:
        cfg = conf(*overrides, return_hydra_config=True)
        for key in cfg:
            if key != "hydra" and OmegaConf.is_config(cfg[key]):  # interpolations resolve
                OmegaConf.to_container(cfg[key], resolve=True)
        try:
            validate(cfg)
        except AppConfigError as e:
            if not re.search(r"needs the \S+ package", str(e)):  # an extra this checkout lacks
                raise

    return check


def check_app(args: list[str], compose_job) -> None:
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from burnlike.app.overrides import override_error

    multirun, overrides = False, []
    rest = iter(args)
    for arg in rest:
        if arg in ("-m", "--multirun"):
            multirun = True
        elif arg in ("--help", "-h", "--hydra-help", "--info", "--resolve"):
            return
        elif arg in ("--cfg", "-c"):
            assert next(rest) in ("job", "hydra", "all")
        elif arg.startswith("-"):
            raise AssertionError(f"train.py: unknown flag {arg}")
        else:
            overrides.append(arg)
    assert override_error(overrides) is None, override_error(overrides)
    kept = []
    for override in overrides:
        key, _, value = override.partition("=")
        if key == "hydra/launcher":  # a launcher plugin this checkout may lack: the option file must exist
            assert (REPO / "burnlike" / "conf" / "hydra" / "launcher" / f"{value}.yaml").exists(), override
            if importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None:
                continue
        kept.append(override)
    if multirun:
        parsed = OverridesParser.create().parse_overrides(kept)
        jobs = [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]
    else:
        jobs = [kept]
    for job in jobs:
        compose_job(job)


def check_burnlike(args: list[str], monkeypatch) -> None:
    import burnlike.cli as cli
    import burnlike.cli_runs as cli_runs

    parsed = []
    for module, name in ((cli, "cmd_inspect"), (cli, "cmd_consolidate"), (cli, "cmd_convert"), (cli_runs, "cmd_summary"),
                         (cli_runs, "cmd_compare")):
        monkeypatch.setattr(module, name, lambda a, name=name: parsed.append((name, a)) or 0)
    try:
        status = cli.main(args)
    except SystemExit as e:  # --version and --help exit 0; a parse error exits 2
        status = e.code
    assert status == 0, f"burnlike {' '.join(args)}: the CLI's parser refuses it"


def check_script(argv: list[str]) -> None:
    script = REPO / argv[0]
    assert script.is_file(), f"{argv[0]}: no such script"
    source = script.read_text()
    for arg in argv[1:]:
        if arg.startswith("--"):
            flag = arg.split("=", 1)[0]
            assert f'"{flag}"' in source or f"'{flag}'" in source, f"{argv[0]} takes no {flag}"


def check_pip(argv: list[str]) -> None:
    assert argv[0] == "install", argv
    section = (REPO / "pyproject.toml").read_text().split("[project.optional-dependencies]")[1].split("\n[")[0]
    extras = set(re.findall(r"^([A-Za-z][\w-]*) = \[", section, re.MULTILINE))
    for arg in argv[1:]:
        m = re.search(r"\[([\w,-]+)\]", arg)
        if m:
            for extra in m.group(1).split(","):
                assert extra in extras, f"pip install {arg}: no extra {extra!r} in pyproject.toml"


def check_command(argv: list[str], compose_job, monkeypatch) -> None:
    head = argv[0]
    if head in ("python", "python3"):
        if len(argv) == 1:
            return
        if argv[1] == "-c":
            compile(argv[2], "<python -c>", "exec")
        elif argv[1] == "-m":
            assert argv[2] in ("venv", "pytest", "pip", "mkdocs", "http.server"), argv
        elif argv[1] == "train.py":
            check_app(argv[2:], compose_job)
        else:
            check_script(argv[1:])
    elif head == "burnlike":
        check_burnlike(argv[1:], monkeypatch)
    elif head == "make":
        targets = set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), re.MULTILINE))
        for target in argv[1:]:
            if "=" not in target:
                assert target in targets, f"make {target}: no such target"
    elif head == "pip":
        check_pip(argv[1:])
    elif head in ("srun", "torchrun"):
        at = next(i for i, a in enumerate(argv) if a == "train.py")
        check_app(argv[at + 1:], compose_job)
    else:
        assert head in ALLOWED, f"{head}: a command this test doesn't know how to check"


def shown_shell_blocks() -> list[Block]:
    found = [b for p in PAGES for b in page_blocks(p) if b.lang in SHELL and not b.runnable]
    found += [b for b in blocks(generated_keys_page(), "docs/hydra/keys.md (generated)") if b.lang in SHELL]
    return found


def test_shown_commands_are_valid(compose_job, monkeypatch):
    checked = 0
    for block in shown_shell_blocks():
        for argv in commands(block.text):
            try:
                check_command(argv, compose_job, monkeypatch)
            except Exception as e:
                raise AssertionError(f"{block}: {shlex.join(argv)}\n{type(e).__name__}: {e}") from e
            checked += 1
    assert checked > 30


def test_a_wrong_key_is_caught(compose_job, monkeypatch):
    """The checker itself: a stale key, a wrong value, an unknown CLI option and a missing target fail."""
    for argv in (["python", "train.py", "trainer.max_epochs=3"], ["python", "train.py", "learner.num_epochs=many"],
                 ["python", "train.py", "learner.recorder=pickle"], ["burnlike", "inspect", "--bogus", "x.mpk"],
                 ["make", "deploy"], ["pip", "install", "-e", ".[nope]"], ["python", "benchmarks/gpu.py", "--fast"]):
        with pytest.raises(BaseException):  # noqa: B017 - each check raises its own kind
            check_command(argv, compose_job, monkeypatch)


# --- python blocks and inline names ------------------------------------------------------------------

def test_python_blocks_compile_and_their_imports_resolve():
    for path in PAGES:
        for block in page_blocks(path):
            if block.lang != "python":
                continue
            tree = compile(block.text, str(block), "exec", ast.PyCF_ONLY_AST)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("burnlike"):
                    module = importlib.import_module(node.module)
                    for alias in node.names:
                        assert hasattr(module, alias.name), f"{block}: {node.module} has no {alias.name}"
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.startswith("burnlike"):
                            importlib.import_module(alias.name)


def public_names() -> dict[str, object]:
    api = load_hook("api_pages")
    names: dict[str, object] = {}
    for module_path, exported in api.exported().items():
        module = importlib.import_module(module_path)
        for name in exported:
            names.setdefault(name, getattr(module, name))
    return names


def has_member(obj: object, member: str) -> bool:
    """An attribute, a dataclass field, or an instance attribute the class sets (`self.store = ...`)."""
    if hasattr(obj, member):
        return True
    if dataclasses.is_dataclass(obj) and member in {f.name for f in dataclasses.fields(obj)}:
        return True
    if inspect.isclass(obj):
        try:
            return re.search(rf"self\.{member}\b", inspect.getsource(obj)) is not None
        except (OSError, TypeError):
            return False
    return False


def test_inline_code_names_exist():
    pytest.importorskip("griffe")
    names = public_names()
    missing = []
    for path in PAGES:
        for m in re.finditer(r"`([A-Z][A-Za-z0-9]*)\.([A-Za-z_][A-Za-z0-9_]*)", path.read_text()):
            owner, member = m.group(1), m.group(2)
            if owner in names and not has_member(names[owner], member):
                missing.append(f"{path.relative_to(REPO)}: {owner}.{member}")
    assert not missing, "inline code naming members that don't exist:\n" + "\n".join(missing)


# --- generated pages ----------------------------------------------------------------------------------

def test_hydra_keys_page_lists_every_option_and_key(conf):
    from omegaconf import OmegaConf

    page = generated_keys_page()
    options = [p for p in (REPO / "burnlike" / "conf").rglob("*.yaml") if p.name != "train.yaml"]
    assert len(options) >= 25
    for path in options:
        group = path.parent.relative_to(REPO / "burnlike" / "conf").as_posix()
        assert f"### `{group}={path.stem}`" in page, f"{group}={path.stem} is not on the keys page"
    for group in ("model", "data", "optimizer"):
        for path in (REPO / "burnlike" / "conf" / group).glob("*.yaml"):
            node = OmegaConf.to_container(conf(f"{group}={path.stem}")[group], resolve=False)
            for key in node:
                assert f"`{group}.{key}" in page, f"{group}={path.stem}: key {key} is not on the keys page"
    base = OmegaConf.to_container(conf(), resolve=False)
    for group in ("trainer", "learner", "logger"):
        for key in base[group]:
            assert f"| `{group}.{key}` |" in page
    for key, value in base.items():
        if not isinstance(value, dict):
            assert f"| `{key}` |" in page, f"top-level key {key} is not on the keys page"


def test_api_reference_covers_every_public_name():
    pytest.importorskip("griffe")
    api = load_hook("api_pages")
    pages = api.build()
    rendered = {(module, name) for page in pages for module, names in page.sections for name in names}
    rendered_objects = {id(getattr(importlib.import_module(m), n)) for m, n in rendered}
    exported = api.exported()
    assert {"burnlike", "burnlike.train", "burnlike.record", "burnlike.data.dataset"} <= set(exported)
    for module, names in exported.items():
        for name in names:
            value = getattr(importlib.import_module(module), name)
            assert (module, name) in rendered or id(value) in rendered_objects, f"{module}.{name} has no reference entry"
    for page in pages:
        text = api.markdown(page)
        for module, names in page.sections:
            for name in names:
                assert f"::: {module}.{name}\n" in text or f"#{module}.{name} }}" in text


# --- sample outputs ------------------------------------------------------------------------------------

TRANSCRIPT = re.compile(r"^<!-- transcript(: numbers vary)? -->$")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass
class Transcript:
    block: Block
    numbers_vary: bool
    runs: list[tuple[str, list[str]]]  # (command, the lines it prints)


def transcripts(path: Path) -> list[Transcript]:
    lines = path.read_text().splitlines()
    found = []
    for block in page_blocks(path):
        marker = next((lines[k].strip() for k in range(block.line - 2, -1, -1) if lines[k].strip()), "")
        m = TRANSCRIPT.match(marker)
        if not m:
            continue
        assert block.lang == "text", f"{block}: a transcript is a text block"
        runs: list[tuple[str, list[str]]] = []
        for line in block.text.splitlines():
            if line.startswith("$ "):
                runs.append((line[2:], []))
            else:
                assert runs, f"{block}: a transcript starts with a `$ command` line"
                runs[-1][1].append(line)
        found.append(Transcript(block, bool(m.group(1)), runs))
    return found


def line_pattern(expected: str, numbers_vary: bool) -> re.Pattern[str]:
    """`expected` as a pattern: whitespace runs alike, a trailing ` ...` any rest of the line, and
    with `numbers_vary` any number for each number."""
    prefix = expected.endswith(" ...")
    text = expected[:-4] if prefix else expected
    parts = []
    for piece in re.split(r"(\s+)", text.rstrip()):
        if piece.isspace():
            parts.append(r"\s+")
        elif numbers_vary:
            chunks = re.split(f"({NUMBER.pattern})", piece)
            parts.append("".join(r"[\d.,]+" if NUMBER.fullmatch(c) else re.escape(c) for c in chunks if c))
        else:
            parts.append(re.escape(piece))
    return re.compile("".join(parts) + (".*" if prefix else r"\s*") + "$")


def matches(expected: list[str], actual: list[str], numbers_vary: bool) -> bool:
    """Whether `actual` is `expected` line for line, each `...` line standing for any lines."""
    patterns = [None if line.strip() == "..." else line_pattern(line, numbers_vary) for line in expected]

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(patterns):
            return j == len(actual)
        if patterns[i] is None:
            return any(match(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and patterns[i].match(actual[j]) is not None and match(i + 1, j + 1)

    return match(0, 0)


TRANSCRIPT_PAGES = [p for p in PAGES if transcripts(p)]


def test_line_patterns_match_what_they_show_and_nothing_else():
    """The matcher itself: exact numbers unless they vary, elisions, whitespace runs."""
    shown = ["a 1", "...", "| x | 92.460   |", "end ..."]
    assert matches(shown, ["a 1", "b", "c", "| x | 92.460 |", "end of it"], numbers_vary=False)
    assert not matches(shown, ["a 2", "| x | 92.460 |", "end"], numbers_vary=False)
    assert matches(shown, ["a 2", "| x | 100.000  |", "end"], numbers_vary=True)
    assert not matches(shown, ["a 2", "| y | 100.000  |", "end"], numbers_vary=True)
    assert not matches(["a"], ["a", "b"], numbers_vary=False)  # a line shown nowhere: not the output


@pytest.mark.slow
@pytest.mark.parametrize("page", TRANSCRIPT_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_sample_outputs_are_what_the_commands_print(page, tiny_mnist, tmp_path):
    cwd = checkout(tmp_path / "checkout")
    env = {**os.environ, "BURNLIKE_DATA": str(tiny_mnist), "CUDA_VISIBLE_DEVICES": "",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for transcript in transcripts(page):
        for command, expected in transcript.runs:
            done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=600)
            actual = [line.rstrip() for line in done.stdout.splitlines()]
            assert matches(expected, actual, transcript.numbers_vary), (
                f"{transcript.block}: `{command}` printed\n" + "\n".join(actual[-60:]))


# --- lists written in several places ---------------------------------------------------------------

def pyproject_extras() -> set[str]:
    section = (REPO / "pyproject.toml").read_text().split("[project.optional-dependencies]")[1].split("\n[")[0]
    return set(re.findall(r"^([A-Za-z][\w-]*) = \[", section, re.MULTILINE))


def test_the_extras_lists_agree_with_pyproject():
    makefile = re.search(r"^EXTRAS := (\S+)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert makefile is not None, "the Makefile's EXTRAS line"
    development = makefile.group(1)
    assert set(development.split(",")) <= pyproject_extras()
    for page in (REPO / "README.md", REPO / "docs" / "getting-started.md", REPO / "docs" / "installation.md"):
        quoted = re.findall(r'pip install -e "\.\[([\w,-]+)\]"', page.read_text())
        long_lists = [q for q in quoted if len(q.split(",")) > 3]
        assert long_lists == [development], f"{page.name} quotes {long_lists}, the Makefile installs {development}"
    table = (REPO / "docs" / "installation.md").read_text().split("## Extras")[1]
    listed = set(re.findall(r"^\| `([\w-]+)` \|", table, re.MULTILINE))
    assert listed == pyproject_extras(), f"installation.md's table: {sorted(listed ^ pyproject_extras())}"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_requirements() -> tuple[list[Requirement], dict[str, list[Requirement]]]:
    """pyproject.toml's dependencies and its extras' requirements."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = {extra: [Requirement(r) for r in reqs] for extra, reqs in project["optional-dependencies"].items()}
    return [Requirement(r) for r in project["dependencies"]], extras


def test_make_test_lowest_installs_pyprojects_lower_bounds():
    """`make test-lowest` tests the versions pyproject.toml admits as lowest, and the installation
    page's table says the same."""
    makefile = (REPO / "Makefile").read_text().replace("\\\n", " ")
    pins = dict(pin.split("==") for pin in re.search(r"^LOWEST := (.+)$", makefile, re.MULTILINE).group(1).split())
    core, _ = pyproject_requirements()
    lower = {_canonical(r.name): s.version for r in core for s in r.specifier if s.operator == ">="}
    assert pins, "the Makefile's LOWEST line"
    for name, version in pins.items():
        assert lower.get(_canonical(name)) is not None and Version(lower[_canonical(name)]) == Version(version), (
            f"make test-lowest installs {name}=={version}; pyproject.toml's lower bound is {lower.get(_canonical(name))}")
    table = (REPO / "docs" / "installation.md").read_text().split("## Tested versions")[1].split("\n## ")[0]
    for name, version in pins.items():
        assert re.search(rf"^\| {re.escape(name)} \| {re.escape(version)} \|", table, re.MULTILINE | re.IGNORECASE), (
            f"installation.md's tested-versions table: {name} {version}")


def _repo_modules() -> set[str]:
    """Modules the repository itself holds outside the package (the docs' build hooks, which the
    docstring test imports from docs/hooks)."""
    return {p.stem for p in (REPO / "docs" / "hooks").glob("*.py")}


def _imported_distributions(root: Path) -> dict[str, str]:
    """Distribution -> a file importing it, for every third-party import under `root` (and every
    `pytest.importorskip("...")`)."""
    owners = importlib.metadata.packages_distributions()
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "importorskip" and node.args and isinstance(node.args[0], ast.Constant)):
                names.add(str(node.args[0].value).split(".")[0])
        for name in names - set(sys.stdlib_module_names) - {"burnlike", "tests", "__main__"} - _repo_modules():
            for dist in owners.get(name, [f"<no installed distribution has {name}>"]):
                found.setdefault(_canonical(dist), str(path.relative_to(REPO)))
    return found


def _closure(requirements: list[Requirement], extras: dict[str, list[Requirement]]) -> set[str]:
    """The distributions `requirements` bring, transitively, as installed here (burnlike's own
    extras taken from pyproject.toml)."""
    seen: set[str] = set()
    todo = [(r, "") for r in requirements]
    while todo:
        requirement, extra = todo.pop()
        name = _canonical(requirement.name)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        if name == "burnlike":
            todo += [(r, "") for e in requirement.extras for r in extras[e]]
            continue
        wanted = {(name, e) for e in requirement.extras} | {(name, "")}
        if all(f"{n}[{e}]" in seen for n, e in wanted):
            continue
        seen |= {f"{n}[{e}]" for n, e in wanted}
        try:
            requires = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for e in ("", *requirement.extras):
            todo += [(Requirement(r), e) for r in requires]
    return {key.split("[")[0] for key in seen}


def test_every_package_burnlike_imports_is_declared_and_the_test_extra_brings_what_the_suite_imports():
    core, extras = pyproject_requirements()
    declared = {_canonical(r.name) for r in [*core, *(r for reqs in extras.values() for r in reqs)]}
    undeclared = {dist: path for dist, path in _imported_distributions(REPO / "burnlike").items()
                  if dist not in declared}
    assert not undeclared, f"imported by burnlike but not in pyproject.toml: {undeclared}"
    brought = _closure([*core, *extras["test"]], extras)
    missing = {dist: path for dist, path in _imported_distributions(REPO / "tests").items() if dist not in brought}
    assert not missing, f"imported by the tests but not brought by burnlike[test]: {missing}"


def conf_groups() -> dict[str, set[str]]:
    groups: dict[str, set[str]] = {}
    for path in (REPO / "burnlike" / "conf").rglob("*.yaml"):
        if path.name != "train.yaml":
            groups.setdefault(path.parent.relative_to(REPO / "burnlike" / "conf").as_posix(), set()).add(path.stem)
    return groups


def test_help_the_keys_page_readme_and_hydra_page_list_the_same_groups():
    groups = conf_groups()
    done = subprocess.run([sys.executable, str(REPO / "train.py"), "--help"], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    section = done.stdout.split("== Config groups")[1].split("== Config (")[0]
    blocks = re.split(r"\n  (?=[\w/]+: )", "\n" + section.split("\n", 1)[1])
    in_help = {}
    for block in blocks:
        m = re.match(r"([\w/]+): (.*)", block.strip(), re.DOTALL)
        if m:
            in_help[m.group(1)] = set(re.findall(r"\b\w+\b", re.sub(r"\([^)]*\)", " ", m.group(2))))
    assert set(in_help) == set(groups), f"--help lists {sorted(in_help)}"
    for group, options in groups.items():
        assert options <= in_help[group], f"--help's {group} lacks {sorted(options - in_help[group])}"
    page = generated_keys_page()
    on_page = set(re.findall(r"^\| \[`([\w/]+)`\]", page, re.MULTILINE))
    assert on_page == set(groups)
    sentence = re.compile(r"groups are ((?:`[\w/]+`(?:,\s+|\s+and\s+)?)+)")
    for text in ((REPO / "README.md").read_text(), (REPO / "docs" / "hydra.md").read_text()):
        m = sentence.search(text)
        assert m is not None and set(re.findall(r"`([\w/]+)`", m.group(1))) == set(groups), m and m.group(0)


def test_every_key_on_the_keys_page_has_a_description_and_no_escape_shows():
    rows = [line for line in generated_keys_page().splitlines() if re.match(r"^\| `[\w.]+` \|", line)]
    assert len(rows) > 100
    undescribed = [row.split(" | ")[0] for row in rows if row.rstrip().endswith("|  |")]
    assert not undescribed, f"keys without a description: {undescribed}"
    for row in rows:
        for span in re.findall(r"`[^`]*`", row):
            assert "\\|" not in span, f"a code span shows its escape: {row}"


# --- links in the repository -----------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_links_between_markdown_files_resolve_in_the_repository():
    """A reader on the repository view follows them too: no link to a page that only a build makes."""
    broken = []
    for path in PAGES:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            file = target.split("#")[0]
            if not (path.parent / file).exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
    assert not broken, "links to files that don't exist:\n" + "\n".join(broken)
