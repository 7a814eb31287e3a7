"""Small helpers shared by the benchmark scripts: data location, header, output."""

from __future__ import annotations

import os
import platform
import statistics
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
# Measure the checkout this script belongs to, not whichever copy of the package
# is installed (an editable install may point at another worktree).
sys.path.insert(0, str(BENCH_DIR.parent))
RESULTS_DIR = BENCH_DIR / "results"
PACKAGES = ("langgraph-ctx", "langgraph", "langchain", "langchain-core", "tiktoken")


def data_dir() -> Path:
    """The shared real data: ``$LANGGRAPH_CTX_DATA`` or ``<repo>/../shared/data``."""
    override = os.environ.get("LANGGRAPH_CTX_DATA")
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "shared" / "data"
    if not path.is_dir():
        sys.exit(f"data directory not found: {path} (set LANGGRAPH_CTX_DATA)")
    return path


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def header(title: str) -> list[str]:
    """A markdown section title plus the machine and package versions."""
    cpus = os.cpu_count()
    machine = f"{platform.platform()}, {platform.machine()}, {cpus} CPU(s)"
    versions = ", ".join(f"{p} {_version(p)}" for p in PACKAGES)
    return [
        f"## {title}",
        "",
        f"- Machine: {machine}",
        f"- Python: {platform.python_implementation()} {platform.python_version()}",
        f"- Packages: {versions}",
        "",
    ]


def median_us(samples_ns: list[int]) -> float:
    return statistics.median(samples_ns) / 1000


def table(head: list[str], rows: list[list[str]], left: int | str = 1) -> list[str]:
    """A markdown table. ``left``: how many leading columns are left-aligned (the
    rest right-aligned), or a string of ``l``/``r`` per column."""
    spec = left if isinstance(left, str) else "l" * left + "r" * (len(head) - left)
    lines = [head, ["---" if a == "l" else "---:" for a in spec], *rows]
    return ["| " + " | ".join(cells) + " |" for cells in lines]


def emit(name: str, lines: list[str]) -> None:
    """Print the markdown section and write it to ``benchmarks/results/<name>.md``."""
    text = "\n".join(lines).rstrip() + "\n"
    print(text)
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"{name}.md"
    out.write_text(text, encoding="utf-8")
    print(f"(written to {out.relative_to(BENCH_DIR.parent)})", file=sys.stderr)


def rss_bytes() -> int:
    """This process's resident size now (Linux ``/proc``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
