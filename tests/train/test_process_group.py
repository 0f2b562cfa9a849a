"""TODO: docstring."""

from __future__ import annotations


def test_the_exit_handler_ends_a_group_without_a_barrier_and_does_nothing_without_one(one_rank_group, monkeypatch):
    """At exit other ranks may be gone: the group ends without waiting at a barrier. With no group
    up (the app's job ended it already, or none was started) it does nothing."""
    from burnlike.train.process_group import end_process_group

    dist = one_rank_group
    barriers: list[int] = []
    original = dist.barrier
    monkeypatch.setattr(dist, "barrier", lambda *a, **k: barriers.append(1) or original(*a, **k))
    end_process_group()  # as atexit calls it
    assert not dist.is_initialized() and barriers == []
    end_process_group()  # nothing up: no error
    end_process_group(barrier=True)
    assert barriers == []
