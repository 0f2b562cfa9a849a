"""The built docs site (`make docs`) as a reader uses it. Opened from disk (`file://…/index.html`),
every link resolves as a browser resolves it there: to a file, never to a folder (which a browser
shows as a directory listing), and to an anchor the target has; every nav entry opens a page.
Served, Material's search (its own worker, run in node when node is there) finds the Hydra page's
`trainer.max_epochs` → `learner.num_epochs` from `max_epochs`, which its default separator misses.
The site shows the version, the changelog, the repository, wraps code lines, and the keys page
shows no escape characters. One build is shared by every test here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest
import yaml

from tests.helpers.paths import HELPERS, REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


class Page(HTMLParser):
    """The links (href/src, with the tag's class) and the ids of one HTML file."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.links: list[tuple[str, str, str]] = []  # (tag, class, url)
        self.ids: set[str] = set()
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if "id" in values:
            self.ids.add(values["id"])
        for attr in ("href", "src"):
            if attr in values and tag in ("a", "link", "script", "img"):
                self.links.append((tag, values.get("class", ""), values[attr]))


def pages(site: Path) -> dict[Path, Page]:
    return {path: Page(path.read_text()) for path in sorted(site.rglob("*.html")) if path.name != "404.html"}


def resolve(page: Path, url: str) -> tuple[Path, str] | None:
    """Where a browser that opened `page` from disk goes for `url` (None: another site)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", url):
        return None  # https:, mailto:, data:
    target = urlparse(urljoin(page.as_uri(), url))
    return Path(unquote(target.path)), target.fragment


@pytest.fixture(scope="module")
def parsed(site):
    return pages(site)


def test_every_link_from_disk_reaches_a_file_and_its_anchor(site, parsed):
    broken = []
    for page, html in parsed.items():
        for tag, _, url in html.links:
            found = resolve(page, url)
            if found is None:
                continue
            target, fragment = found
            where = f"{page.relative_to(site)}: <{tag}> {url}"
            if target.is_dir() or url.split("#")[0].endswith("/"):
                broken.append(f"{where} opens a directory listing")
            elif not target.is_file():
                broken.append(f"{where}: no such file")
            elif fragment and target.suffix == ".html" and target in parsed and fragment not in parsed[target].ids:
                broken.append(f"{where}: no #{fragment} there")
    assert not broken, f"{len(broken)} links fail from disk:\n" + "\n".join(broken[:40])


def test_every_nav_entry_opens_a_page(site, parsed):
    nav = {url for tag, cls, url in parsed[site / "index.html"].links if "md-nav__link" in cls or "md-tabs__link" in cls}
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())

    def entries(items):
        for item in items:
            for value in (item.values() if isinstance(item, dict) else [item]):
                yield from (entries(value) if isinstance(value, list) else [value])

    written = [page for page in entries(config["nav"]) if page]
    assert len(nav) >= len(written) + 5  # the hand-written pages, and the generated API reference's
    for url in nav:
        found = resolve(site / "index.html", url)
        assert found is not None, url
        target, _ = found
        assert target.is_file() and "<article" in target.read_text(), f"nav entry {url} opens no page"
    for page in written:
        assert page.replace(".md", ".html") in {u.split("#")[0] for u in nav}, f"{page} is not in the nav"


def test_the_site_shows_version_changelog_repository_and_wraps_code(site):
    version = re.search(r'^__version__ = "([^"]+)"', (REPO / "burnlike" / "__init__.py").read_text(), re.MULTILINE)
    assert version is not None
    index = (site / "index.html").read_text()
    assert f"burnlike {version.group(1)}" in re.search(r"<title>(.*?)</title>", index).group(1)
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    assert f'href="{config["repo_url"]}"' in index
    assert f"git clone {config['repo_url']} burnlike" in re.sub(r"<[^>]+>", "", index)  # the install line
    changelog = (site / "changelog.html").read_text()
    assert "Unreleased" in changelog and "Keep a Changelog" in changelog
    assert 'href="stylesheets/extra.css"' in index
    css = (site / "stylesheets" / "extra.css").read_text()
    assert re.search(r"pre > code \{[^}]*white-space: pre-wrap", css)


def test_the_keys_page_shows_no_escape_characters(site):
    text = (site / "hydra" / "keys.html").read_text()
    assert "learner.num_epochs" in text
    assert "\\|" not in text


# --- search ---------------------------------------------------------------------------------------

def search_index(site: Path) -> dict:
    return json.loads((site / "search" / "search_index.json").read_text())


MAPPING = "hydra.html#errors"  # `trainer.max_epochs` → `learner.num_epochs`, in the page's text


def test_search_splits_dotted_and_snake_case_names_into_words(site):
    index = search_index(site)
    separator = re.compile(index["config"]["separator"])
    doc = next(d for d in index["docs"] if d["location"] == MAPPING)
    words = {w.lower() for w in separator.split(re.sub(r"<[^>]+>", " ", doc["text"])) if w}
    assert {"trainer", "max", "epochs", "learner", "num"} <= words
    assert set(separator.split("max_epochs")) == {"max", "epochs"}


def material_search(site: Path, index: Path, query: str) -> list[str]:
    worker = next((site / "assets" / "javascripts" / "workers").glob("search.*.min.js"))
    done = subprocess.run(["node", str(HELPERS / "material_search.js"), str(worker), str(index), query],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return [doc["location"] for group in json.loads(done.stdout) for doc in group]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run Material's search worker")
def test_served_search_finds_the_app_key_from_lightnings_name(site, tmp_path):
    found = material_search(site, site / "search" / "search_index.json", "max_epochs")
    assert MAPPING in found
    docs = {d["location"]: d["text"] for d in search_index(site)["docs"]}
    assert "learner.num_epochs" in docs[MAPPING]
    # the check itself: Material's default separator (spaces and dashes) misses it
    default = search_index(site)
    default["config"]["separator"] = r"[\s\-]+"
    (tmp_path / "index.json").write_text(json.dumps(default))
    assert MAPPING not in material_search(site, tmp_path / "index.json", "max_epochs")
