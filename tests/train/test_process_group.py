"""`burnlike.train.process_group`: the exit handler ends a DDP process group without waiting at a
barrier (at exit the other ranks may be gone), and does nothing when no group is up; it is
registered once per process, however many fits the process runs."""

from __future__ import annotations

import atexit

from burnlike.train import process_group
from burnlike.train.process_group import end_at_exit, end_process_group


def test_the_exit_handler_ends_a_group_without_a_barrier_and_does_nothing_without_one(one_rank_group, monkeypatch):
    """With no group up (the app's job ended it already, or none was started) it does nothing."""
    dist = one_rank_group
    barriers: list[int] = []
    original = dist.barrier
    monkeypatch.setattr(dist, "barrier", lambda *a, **k: barriers.append(1) or original(*a, **k))
    end_process_group()  # as atexit calls it
    assert not dist.is_initialized() and barriers == []
    end_process_group()  # nothing up: no error
    end_process_group(barrier=True)
    assert barriers == []


def test_the_exit_handler_is_registered_once_for_many_fits(monkeypatch):
    """A process that runs a sweep's fits one after another keeps one handler, not one per fit."""
    registered: list[object] = []
    monkeypatch.setattr(process_group, "_registered", False)
    monkeypatch.setattr(atexit, "register", registered.append)
    for _ in range(3):
        end_at_exit()
    assert registered == [end_process_group]
