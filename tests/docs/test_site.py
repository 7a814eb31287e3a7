"""The docs site builds with ``mkdocs build --strict``, offline, and links resolve."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs.blocks import ROOT, pages

# [text](target) and ![alt](target), outside code; the target up to a space or ")".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCED = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _without_network() -> list[str]:
    """A new network namespace where the machine allows one: a build that fetched
    anything (fonts, social cards, an inventory) fails there instead of passing."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


@pytest.mark.slow  # a whole site build, API reference included
def test_mkdocs_build_strict_passes_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [*_without_network(), sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr
    # The API reference is rendered from the docstrings, not left as a ::: line.
    for page, name in [("agent", "create_context_agent"), ("interop", "ContextMiddleware")]:
        reference = (site / "reference" / page / "index.html").read_text(encoding="utf-8")
        assert f'id="{name}"' in reference or f'.{name}"' in reference, (page, name)
        assert ":::" not in reference
    for page in (ROOT / "docs").rglob("*.md"):
        built = site / page.relative_to(ROOT / "docs").with_suffix("")
        html = built / "index.html" if built.name != "index" else built.with_suffix(".html")
        assert html.exists(), f"{page} has no page in the site"
    broken = _dead_links(site)
    assert not broken, "the built site links to nothing:\n" + "\n".join(broken)


class _Page(HTMLParser):
    """The links (href, src) and anchors (id, name) of one HTML file."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.links: list[str] = []
        self.anchors: set[str] = set()
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and name in ("href", "src"):
                self.links.append(value)
            elif value and name in ("id", "name"):
                self.anchors.add(value)


def _dead_links(site: Path) -> list[str]:
    """Every link of the built site that names a file, or an anchor in it, that is
    not there: what a reader of the site would click and not find. mkdocs checks
    the pages' Markdown links; this also sees the theme's and the API reference's."""
    parsed: dict[Path, _Page] = {}

    def page(path: Path) -> _Page:
        if path not in parsed:
            parsed[path] = _Page(path)
        return parsed[path]

    dead = []
    for html in sorted(site.rglob("*.html")):
        for link in page(html).links:
            url = urlsplit(link)
            if url.scheme or url.netloc:
                continue  # another site: not this build's to check, and no network here
            target = html
            if url.path:  # "/x" is the site's root (404.html has no base to be relative to)
                base = site if url.path.startswith("/") else html.parent
                target = (base / unquote(url.path).lstrip("/")).resolve()
                target = target / "index.html" if target.is_dir() else target
            fragment = unquote(url.fragment)
            if not target.exists():
                dead.append(f"{html.relative_to(site)}: {link}")
            elif fragment and target.suffix == ".html" and fragment not in page(target).anchors:
                dead.append(f"{html.relative_to(site)}: {link} (no such anchor)")
    return dead


def test_every_relative_link_names_a_file_that_exists() -> None:
    """On the repository's file view: README.md is not a page of the site, and the
    docs' links into the repository (../benchmarks/RESULTS.md) must work there too
    (in the site, mkdocs_hooks.py serves them and the build test checks them)."""
    broken = []
    for page in pages():
        text = INLINE_CODE.sub("", FENCED.sub("", page.read_text(encoding="utf-8")))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:|#", target):
                continue
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def _linked_pages(page: Path) -> set[Path]:
    text = INLINE_CODE.sub("", FENCED.sub("", page.read_text(encoding="utf-8")))
    found = set()
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:|#", target):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if path.suffix == ".md" and path.exists():
            found.add(path)
    return found


def test_what_a_new_user_looks_for_is_two_clicks_from_the_readme() -> None:
    """Issue 33's list: each task is shown (its code, not a mention) on the README or
    on a page at most two links away."""
    readme = ROOT / "README.md"
    one = _linked_pages(readme)
    reached = {readme} | one | {p for page in one for p in _linked_pages(page)}
    texts = {p: p.read_text(encoding="utf-8") for p in reached}
    wanted = {
        "add to an existing StateGraph": "pipeline.attach(builder).compile(",
        "choose a strategy": '| [`"tiered"`]',
        "run on ChatOpenAI": 'ChatOpenAI(model="',
        "run on ChatAnthropic": 'ChatAnthropic(model="',
        "deploy on LangGraph Server": "langgraph dev --no-browser",
        "resume from Postgres": "graph.invoke(None, config)",
    }
    missing = [task for task, code in wanted.items() if not any(code in t for t in texts.values())]
    assert not missing, f"not within two clicks of README.md: {missing}"
