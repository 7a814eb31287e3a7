"""What the wheel ships: the package and its SQL, never the benchmark harness or the tests."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from langgraph_ctx.storage.migrations import load_migrations

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_its_migrations_only(built_wheel: Path) -> None:
    names = zipfile.ZipFile(built_wheel).namelist()
    code = [n for n in names if ".dist-info/" not in n]
    assert code and all(n.startswith("langgraph_ctx/") for n in code), code
    assert not [n for n in code if "bench" in n], "the benchmark harness belongs in benchmarks/"
    shipped_sql = sorted(n for n in code if n.endswith(".sql"))
    assert shipped_sql == sorted(
        f"langgraph_ctx/storage/sql/{m.label}.{d}.sql"
        for d in ("postgres", "sqlite")
        for m in load_migrations(d)  # type: ignore[arg-type]
    )
    assert len(shipped_sql) >= 4
    # Every module of the source tree is in the wheel (no subpackage forgotten by find).
    source = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "langgraph_ctx").rglob("*.py"))
    assert sorted(n for n in code if n.endswith(".py")) == source
    assert "langgraph_ctx/py.typed" in code
