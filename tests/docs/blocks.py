"""The fenced blocks of README.md and docs/, read line by line as Markdown does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    indent: str
    code: str

    @property
    def where(self) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of the docs site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        start = OPEN.match(lines[i])
        if start is None:
            i += 1
            continue
        fence, indent = start["fence"], start["indent"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            line = lines[j]
            body.append(line[len(indent) :] if line.startswith(indent) else line)
            j += 1
        found.append(Block(path, i + 1, start["info"].lower(), indent, "\n".join(body) + "\n"))
        i = j + 1
    return found


def python_blocks() -> list[Block]:
    """What the runner runs: every block fenced as ``python``."""
    return [b for p in pages() for b in blocks(p) if b.lang == "python"]
