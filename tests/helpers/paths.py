"""Where things are, for tests at any depth of tests/."""

from __future__ import annotations

import os
from pathlib import Path

HELPERS = Path(__file__).resolve().parent  # tests/helpers: the scripts tests run as child processes
TESTS = HELPERS.parent
REPO = TESTS.parent
CONF = REPO / "conf"  # the app's primary config, as train.py composes it
# The real MNIST files and Burn-written records: BURNLIKE_DATA, else the checkout's ../shared/data
SHARED_DATA = Path(os.environ.get("BURNLIKE_DATA") or REPO.parent / "shared" / "data")
