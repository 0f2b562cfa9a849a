"""Which Burn version's record layout to write or read. 0.19 and 0.21 differ in three places:
Bool's dtype field, Conv2d geometry (`[nil, nil]`), and optional stateless modules (`Some(nil)`)."""

from __future__ import annotations

DEFAULT_VERSION = "0.21.0"
_UP_TO_0_19 = ("0.14", "0.15", "0.16", "0.17", "0.18", "0.19")


def is_0_19(version: str) -> bool:
    """Whether `version` (a record's metadata `version`, e.g. "0.19.1") uses Burn ≤ 0.19's layout."""
    return version.startswith(_UP_TO_0_19)
