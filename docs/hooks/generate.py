"""mkdocs hook: pages generated at build time, so they can't go stale.

- `hydra/keys.md`: every group option in `burnlike/conf/` and every key with its default and
  comment, from the config schema (`burnlike/app/schema.py`) and the YAML files (`hydra_keys.py`).
- `reference/*.md`: one `::: name` entry per name in the package's `__all__` lists (`api_pages.py`).
- In a hand-written page, the line `<!-- generated: enum table -->` becomes the table of every public
  enum and its members' spellings (`api_pages.enum_table`), as the code has them.

The API reference's pages are put into the nav's "API reference" section here too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api_pages  # noqa: E402
import hydra_keys  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

REFERENCE_SECTION = "API reference"
ENUM_TABLE = "<!-- generated: enum table -->"


def on_config(config: Any) -> Any:
    pages = api_pages.build()
    for entry in config.nav or []:
        if isinstance(entry, dict) and REFERENCE_SECTION in entry:
            entry[REFERENCE_SECTION] = [{page.title: page.file} for page in pages]
    return config


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "hydra/keys.md", content=hydra_keys.markdown()))
    for page in api_pages.PAGES:
        files.append(File.generated(config, page.file, content=api_pages.markdown(page)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if ENUM_TABLE in markdown:
        markdown = markdown.replace(ENUM_TABLE, api_pages.enum_table())
    return markdown
