"""Fixtures the test folders share: the app's config composed as train.py composes it (`conf`), a
one-rank process group, spies on a save's disk calls, terminals for the displays, tiny MNIST files,
the hostile record files and torch's fake CUDA tensors.

Under `make mutation`, a mutant's run leaves out the tests marked `slow` (subprocess and
integration runs, 5-60 s each here): a surviving mutant runs every test that covers it, and with them
a full mutation run would take a day on 2 cores instead of hours. A mutant only a slow test would
catch counts as surviving, so the score errs low, unless it is listed in scripts/mutation_slow.txt
with that test (scripts/mutation.py then runs it against the mutant, `BURNLIKE_MUTANT_SLOW=1`). Tests marked `stack` (which frame a warning names)
are left out of every mutmut run: mutmut's trampolines add frames. `make test` runs them all."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from tests.helpers.hostile import CASES
from tests.helpers.idx import write_mnist_idx
from tests.helpers.paths import CONF


def pytest_sessionstart(session: pytest.Session) -> None:
    """mutmut runs several pytest sessions in one process: a handler a library made in an earlier
    session (Lightning's, on that session's captured stderr) holds a closed stream in the next one,
    and each of its lines would print a logging error into a test's stderr. Point them at this
    session's stderr."""
    if "MUTANT_UNDER_TEST" not in os.environ:
        return
    import logging

    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", ()):
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and getattr(stream, "closed", False):
                handler.stream = sys.stderr  # (setStream would flush the closed one first)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "MUTANT_UNDER_TEST" not in os.environ:  # a plain run
        return
    # mutmut's stats run (which tests cover which function) leaves slow tests out too: a function only
    # they reach gets "no tests", the verdict a mutant's run would give it with them left out
    left_out = {"stack"} if os.environ.get("BURNLIKE_MUTANT_SLOW") else {"stack", "slow"}
    out = [item for item in items if any(item.get_closest_marker(m) for m in left_out)]
    if out:
        config.hook.pytest_deselected(items=out)
        items[:] = [item for item in items if item not in out]


_WATCHED_LOGGERS = ("", "burnlike", "burnlike.train", "lightning", "lightning.pytorch")


@pytest.fixture(autouse=True)
def _no_handler_outlives_its_test():
    """A test that runs the app in-process lets Hydra configure logging, whose handlers hold the
    stream pytest captured for that test, closed once it ends: a later test's log line would then
    print a logging error into its own captured stderr. Plain stream and file handlers a test adds
    are removed after it (pytest's own capture handlers are left to pytest)."""
    import logging

    loggers = [logging.getLogger(name) for name in _WATCHED_LOGGERS]
    before = {id(lg): set(map(id, lg.handlers)) for lg in loggers}
    yield
    for lg in loggers:
        for handler in list(lg.handlers):
            if id(handler) not in before[id(lg)] and type(handler) in (logging.StreamHandler, logging.FileHandler):
                lg.removeHandler(handler)
                handler.close()


@pytest.fixture(autouse=True)
def _no_environment_outlives_its_test():
    """The environment each test starts from is the session's. Lightning's in-process fit under a
    distributed strategy exports `LOCAL_RANK`, `MASTER_PORT`, ...; a later multi-process run would
    inherit them, take itself for a rank Lightning already launched, spawn no other ranks and wait
    for them forever. W&B exports its service's socket, which a later subprocess would connect to."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture(scope="module")
def conf():
    """`conf(*overrides)`: the app's config composed by Hydra from conf/, as `train.py` composes it."""


    from burnlike.app.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield lambda *overrides, **kw: compose("config", overrides=list(overrides), **kw)
    GlobalHydra.instance().clear()


@pytest.fixture
def one_rank_group(tmp_path):
    """A real one-rank gloo process group, as a DDP job's rank has one during its fit."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    yield dist
    if dist.is_initialized():
        dist.destroy_process_group()


@pytest.fixture
def disk_calls(monkeypatch):
    """`os.fsync` and `os.replace` as a save makes them, in order (both still done):
    `("fsync", inode, "file" | "dir")` and `("replace", inode of the source, source, destination)`."""
    import stat
    from pathlib import Path

    calls: list[tuple] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        calls.append(("fsync", st.st_ino, "dir" if stat.S_ISDIR(st.st_mode) else "file"))
        real_fsync(fd)

    def replace(src, dst, *args, **kwargs) -> None:
        calls.append(("replace", os.stat(src).st_ino, Path(src), Path(dst)))
        real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return calls


@pytest.fixture
def terminal(monkeypatch):
    """`terminal()` makes `sys.stdout` a terminal (isatty) and returns it, read back with
    `.getvalue()`; rich's console made anew. Called in the test: pytest sets its own `sys.stdout`
    between a fixture's setup and the test."""
    import io

    import rich

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def install() -> Terminal:
        out = Terminal()
        monkeypatch.setattr(rich, "_console", None)
        monkeypatch.setattr(sys, "stdout", out)
        return out

    return install


@pytest.fixture
def colour_terminal(monkeypatch, terminal):
    """`terminal`, with colours forced on (FORCE_COLOR, no NO_COLOR)."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    return terminal


@pytest.fixture(scope="module")
def tiny_app(tmp_path_factory):
    """MNIST files of 256 train and 128 test images (the app's runs, in-process and as commands)."""
    return write_mnist_idx(tmp_path_factory.mktemp("mnist"), n_train=256, n_test=128)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {name: build(tmp_path_factory.mktemp(name.replace(".", "-"))) for name, (build, _) in CASES.items()}


@pytest.fixture
def fake_cuda():
    """torch's fake-tensor mode, in which `device="cuda"` makes CUDA tensors without a GPU: they hold
    no values, but shapes, dtypes and devices are checked as on a GPU (a CPU operand is refused where
    CUDA refuses it). `with fake_cuda: ...`; skipped where this torch makes none."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    try:
        with mode:
            torch.empty(1, device="cuda")
    except (RuntimeError, AssertionError) as e:
        pytest.skip(f"this torch makes no fake CUDA tensors ({e})")
    return mode
