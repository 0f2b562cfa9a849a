"""mkdocs hook: what is filled in at build time, so it can't go stale.

- `hydra/keys.md`: every group option in `burnlike/conf/` and every key with its default and
  description, from the config schema (`burnlike/app/schema.py`) and the YAML files (`hydra_keys.py`).
- `reference/*.md`: one `::: name` entry per name in the package's `__all__` lists (`api_pages.py`);
  `reference/index.md` lists those pages.
- `changelog.md`: CHANGELOG.md at the repository root.
- In a hand-written page, `<!-- generated: enum table -->` becomes the table of every public enum and
  its members' spellings (`api_pages.enum_table`), and `<repository URL>` the site's `repo_url`.
- The site's name gets `burnlike.__version__`, so every page says which version it documents.

`hydra/keys.md`, `reference/index.md` and `changelog.md` are committed as short pages that say where
their content comes from, so links to them work in the repository too; the build replaces them.
The API reference's pages are put into the nav's "API reference" section here as well.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api_pages  # noqa: E402
import hydra_keys  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_SECTION = "API reference"
REFERENCE_INDEX = "reference/index.md"
ENUM_TABLE = "<!-- generated: enum table -->"
REPOSITORY = "<repository URL>"


def version() -> str:
    """`burnlike.__version__` as the package writes it (read, not imported: the docs build needs no torch)."""
    for line in (ROOT / "burnlike" / "__init__.py").read_text().splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise RuntimeError("burnlike/__init__.py writes no __version__")


def on_config(config: Any) -> Any:
    pages = api_pages.build()
    for entry in config.nav or []:
        if isinstance(entry, dict) and REFERENCE_SECTION in entry:
            entry[REFERENCE_SECTION] = [REFERENCE_INDEX, *({page.title: page.file} for page in pages)]
    config.site_name = f"burnlike {version()}"
    config.copyright = f"burnlike {version()} · dual-licensed under MIT or Apache-2.0"
    return config


def on_files(files: Files, config: Any) -> Files:
    for page in api_pages.PAGES:
        files.append(File.generated(config, page.file, content=api_pages.markdown(page)))
    return files


def changelog() -> str:
    """CHANGELOG.md, whose first heading names the page."""
    return (ROOT / "CHANGELOG.md").read_text()


def reference_index() -> str:
    rows = [f"| [`{page.title}`]({Path(page.file).name}) | {page.intro} |" for page in api_pages.PAGES]
    return "\n".join([
        "# API reference", "",
        "Every name in the package's `__all__` lists, a page per area, generated from the docstrings "
        "when the site is built. The guides link names to their entries here.", "",
        "| page | what it holds |", "|---|---|", *rows, ""])


GENERATED = {"hydra/keys.md": hydra_keys.markdown, "changelog.md": changelog, REFERENCE_INDEX: reference_index}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    make = GENERATED.get(page.file.src_uri)
    if make is not None:
        markdown = make()
    if ENUM_TABLE in markdown:
        markdown = markdown.replace(ENUM_TABLE, api_pages.enum_table())
    if make is None and not page.file.src_uri.startswith("reference/"):  # a guide: names link to the reference
        markdown = api_pages.link_names(markdown, api_pages.link_targets())
    return markdown.replace(REPOSITORY, str(config.repo_url))
