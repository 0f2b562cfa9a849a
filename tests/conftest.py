"""Under `make mutation`, a mutant's run leaves out the tests marked `slow` (subprocess and
integration runs, 5-60 s each here): a surviving mutant runs every test that covers it, and with them
a full mutation run would take a day on 2 cores instead of hours. A mutant only a slow test would
catch counts as surviving, so the score errs low. `make test` runs them all."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):  # not a mutant's run (a plain run, stats)
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
