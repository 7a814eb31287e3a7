"""mkdocs hook: links from the docs into the repository work in the built site too.

Pages link to files outside docs/ (``../benchmarks/RESULTS.md``, ``../examples/x.py``)
so that the same link works on the repository's file view. mkdocs publishes only
docs/, so each such file is added to the site under ``repository/<its path>`` and the
link is rewritten to point there: a Markdown file becomes a page (its own links into
the repository are followed the same way), a source file a page showing its code,
anything else (a plot) is copied as it is. Nothing is fetched, and the site does not
depend on where the repository is hosted.

A link to a file that does not exist is left alone, so mkdocs' own check
(``validation.links.not_found: warn`` under ``--strict``) fails the build on it; a
link to a directory has no page to go to and fails the build here.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

log = logging.getLogger("mkdocs.hooks.repository_links")

MOUNT = "repository"
ROOT = Path(__file__).resolve().parent
# Shown as a page with its code highlighted, rather than sent as a download.
CODE = {".py": "python", ".json": "json", ".toml": "toml", ".yml": "yaml", ".yaml": "yaml"}

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+).+?\1")
# [text](target) and ![alt](target), with an optional "title".
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")

_sources: dict[str, Path] = {}  # src_uri of a page -> the file it was read from


def _links(markdown: str) -> list[re.Match[str]]:
    """The links of a page, leaving out those shown in fenced blocks and code spans."""
    code: list[tuple[int, int]] = []
    fence, offset, opened_at = "", 0, 0
    for line in markdown.splitlines(keepends=True):
        opened = FENCE.match(line)
        if fence and opened and line.strip().startswith(fence):
            code.append((opened_at, offset + len(line)))
            fence = ""
        elif not fence and opened:
            fence, opened_at = opened.group(1), offset
        elif not fence:
            code += [(offset + m.start(), offset + m.end()) for m in INLINE_CODE.finditer(line)]
        offset += len(line)
    if fence:
        code.append((opened_at, offset))
    return [m for m in LINK.finditer(markdown) if not any(a <= m.start() < b for a, b in code)]


def _repository_target(page: Path, docs: Path, target: str) -> Path | None:
    """The repository file a relative link leaves docs/ for, or None."""
    if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:|#|/", target):
        return None
    path = (page.parent / target.split("#", 1)[0]).resolve()
    if path.is_relative_to(docs) or not path.is_relative_to(ROOT) or not path.exists():
        return None
    return path


def _site_uri(path: Path, docs: Path) -> str:
    """Where a repository file lives in the site's source tree."""
    if path.is_relative_to(docs):
        return path.relative_to(docs).as_posix()
    uri = f"{MOUNT}/{path.relative_to(ROOT).as_posix()}"
    return f"{uri}.md" if path.suffix in CODE else uri


def _code_page(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    longest = max((len(m) for m in re.findall(r"`{3,}", source)), default=0)
    fence = "`" * max(3, longest + 1)
    shown = path.relative_to(ROOT).as_posix()
    return f"# `{shown}`\n\n{fence}{CODE[path.suffix]}\n{source.rstrip()}\n{fence}\n"


def _add(files: Files, config: Any, path: Path, docs: Path) -> bool:
    """Put one repository file in the site; False if it is there already (or a directory)."""
    uri = _site_uri(path, docs)
    if uri in _sources or files.get_file_from_path(uri) is not None:
        return False
    if path.is_dir():
        log.warning(f"a link goes to the directory {path.relative_to(ROOT)}/: link a file in it")
        return False
    if path.suffix in CODE:
        file = File.generated(config, uri, content=_code_page(path))
    else:
        file = File.generated(config, uri, abs_src_path=str(path))
    file.inclusion = InclusionLevel.NOT_IN_NAV
    files.append(file)
    _sources[uri] = path
    return True


def on_files(files: Files, config: Any) -> Files:
    """Add every repository file a page links to, and what those files link to."""
    _sources.clear()
    docs = Path(config["docs_dir"]).resolve()
    todo = [Path(f.abs_src_path) for f in files.documentation_pages() if f.abs_src_path]
    while todo:
        source = todo.pop()
        for match in _links(source.read_text(encoding="utf-8")):
            path = _repository_target(source, docs, match.group(2))
            if path is not None and _add(files, config, path, docs) and path.suffix == ".md":
                todo.append(path)
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Point the links that leave docs/ at the copies on_files added."""
    docs = Path(config["docs_dir"]).resolve()
    uri = page.file.src_uri
    source = _sources.get(uri) or Path(page.file.abs_src_path)
    here = posixpath.dirname(uri)

    pieces, last = [], 0
    for match in _links(markdown):
        path = _repository_target(source, docs, match.group(2))
        if path is None or path.is_dir():
            continue
        anchor = match.group(2)[len(match.group(2).split("#", 1)[0]) :]
        target = posixpath.relpath(_site_uri(path, docs), here or ".")
        pieces += [markdown[last : match.start(2)], target + anchor]
        last = match.end(2)
    return "".join([*pieces, markdown[last:]])
