"""The migration runner: order, transactions, idempotence, concurrent first start,
changed-file refusal, SQLite parity, and ``migrate`` from an installed wheel."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import sysconfig
import threading
import venv
import zipfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.postgres import PostgresSaver

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.storage.archive import SQLiteArchive
from langgraph_ctx.storage.migrations import load_migrations, migrate, migration_status

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = tuple(m.version for m in load_migrations("postgres"))


def rows(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()  # type: ignore[arg-type]


def write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


THREE = {
    # Written out of order on purpose: the runner orders by version, not by listing.
    "0003_fill.postgres.sql": "INSERT INTO t (a, b) VALUES (1, 'three');",
    "0001_create.postgres.sql": "-- the first\nCREATE TABLE t (a INTEGER);\n",
    "0002_widen.postgres.sql": "ALTER TABLE t ADD COLUMN b TEXT;",
}


def test_shipped_migrations_pair_up_across_dialects() -> None:
    postgres, sqlite = load_migrations("postgres"), load_migrations("sqlite")
    assert (
        [m.label for m in postgres]
        == [m.label for m in sqlite]
        == [
            "0001_archive",
            "0002_events",
            "0003_archive_search",
            "0004_memory_index",
            "0005_archive_passages",
            "0006_stemmed_search",
            "0007_archive_vectors",
        ]
    )
    assert all(len(m.checksum) == 64 for m in postgres + sqlite)


def test_applies_in_version_order_and_records_each(postgres_db: str, tmp_path: Path) -> None:
    status = migrate(postgres_db, directory=write(tmp_path / "m", THREE))
    assert status.applied_now == (1, 2, 3) and status.up_to_date
    assert rows(postgres_db, "SELECT a, b FROM t") == [(1, "three")]
    recorded = rows(postgres_db, "SELECT version, name FROM lgctx_schema_versions ORDER BY 1")
    assert recorded == [(1, "create"), (2, "widen"), (3, "fill")]


def test_a_failing_migration_leaves_no_trace_and_keeps_earlier_ones(
    postgres_db: str, tmp_path: Path
) -> None:
    files = {**THREE, "0002_widen.postgres.sql": "ALTER TABLE t ADD COLUMN b TEXT; SELECT 1/0;"}
    with pytest.raises(psycopg.errors.DivisionByZero):
        migrate(postgres_db, directory=write(tmp_path / "m", files))
    assert rows(postgres_db, "SELECT version FROM lgctx_schema_versions") == [(1,)]
    columns = rows(
        postgres_db, "SELECT column_name FROM information_schema.columns WHERE table_name = 't'"
    )
    assert columns == [("a",)]  # 0002's ALTER rolled back with it
    assert migrate(postgres_db, directory=write(tmp_path / "fixed", THREE)).applied_now == (2, 3)


def test_idempotent_and_runs_langgraph_setup(postgres_db: str) -> None:
    first = migrate(postgres_db)
    assert first.applied_now == SHIPPED
    again = migrate(postgres_db)
    assert again.applied_now == () and again.up_to_date
    assert "up to date" in again.langgraph
    known = len(PostgresSaver.MIGRATIONS)
    assert rows(postgres_db, "SELECT count(*), count(DISTINCT v) FROM checkpoint_migrations") == [
        (known, known)
    ]
    tables = {
        r[0]
        for r in rows(postgres_db, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    }
    assert {"lgctx_archive", "lgctx_events", "lgctx_schema_versions", "checkpoints"} <= tables
    # Ours carry no foreign keys (LangGraph's prune/delete_thread delete from its tables).
    assert rows(
        postgres_db,
        "SELECT count(*) FROM information_schema.table_constraints"
        " WHERE constraint_type = 'FOREIGN KEY' AND table_name LIKE 'lgctx_%'",
    ) == [(0,)]


def test_status_reports_pending_then_applied(postgres_db: str) -> None:
    before = migration_status(postgres_db)
    assert [m.state for m in before.migrations] == ["pending"] * len(SHIPPED)
    assert not before.up_to_date and "not set up" in before.langgraph
    migrate(postgres_db)
    after = migration_status(postgres_db)
    assert after.up_to_date and all(m.applied_at for m in after.migrations)


def test_concurrent_first_start_applies_each_migration_once(postgres_db: str) -> None:
    # Eight processes' worth of connections start at once on an empty database. Each
    # gets its own session, so the advisory lock is what serializes them; LangGraph's
    # setup alone fails with UniqueViolation when called concurrently.
    barrier = threading.Barrier(8)

    def start(_: int) -> tuple[int, ...]:
        barrier.wait()
        return migrate(postgres_db).applied_now

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(start, range(8)))
    # Each migration applied exactly once, whichever threads applied them.
    assert sorted(v for applied in results for v in applied) == list(SHIPPED)
    assert rows(postgres_db, "SELECT version FROM lgctx_schema_versions ORDER BY 1") == [
        (v,) for v in SHIPPED
    ]
    known = len(PostgresSaver.MIGRATIONS)
    assert rows(postgres_db, "SELECT count(*) FROM checkpoint_migrations") == [(known,)]


def test_refuses_when_an_applied_migration_changed(postgres_db: str) -> None:
    migrate(postgres_db)
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("UPDATE lgctx_schema_versions SET checksum = 'f00d' WHERE version = 2")
    with pytest.raises(ConfigurationError, match=r"0002_events.*checksum f00d.*append-only"):
        migrate(postgres_db)
    status = migration_status(postgres_db)
    assert [m.state for m in status.migrations][:2] == ["applied", "changed"]


def test_refuses_when_an_applied_file_is_edited(postgres_db: str, tmp_path: Path) -> None:
    directory = write(tmp_path / "m", THREE)
    migrate(postgres_db, directory=directory)
    (directory / "0001_create.postgres.sql").write_text("CREATE TABLE t (a BIGINT);")
    with pytest.raises(ConfigurationError, match="migration 0001_create was applied"):
        migrate(postgres_db, directory=directory)
    # A CRLF checkout of the unchanged file is not a change.
    (directory / "0001_create.postgres.sql").write_bytes(
        THREE["0001_create.postgres.sql"].encode().replace(b"\n", b"\r\n")
    )
    assert migrate(postgres_db, directory=directory).applied_now == ()


def test_refuses_a_database_migrated_by_a_newer_version(postgres_db: str, tmp_path: Path) -> None:
    migrate(postgres_db, directory=write(tmp_path / "new", THREE))
    older = write(tmp_path / "old", {k: v for k, v in THREE.items() if not k.startswith("0003")})
    with pytest.raises(ConfigurationError, match=r"0003_fill.*newer version"):
        migrate(postgres_db, directory=older)


def test_rejects_gaps_in_numbering(tmp_path: Path) -> None:
    files = {k: v for k, v in THREE.items() if not k.startswith("0002")}
    with pytest.raises(ConfigurationError, match="without gaps"):
        load_migrations("postgres", write(tmp_path / "m", files))


def test_memory_url_has_nothing_to_migrate() -> None:
    with pytest.raises(ConfigurationError, match="nothing to migrate"):
        migrate("memory://")


# -- SQLite ------------------------------------------------------------------


def test_a_file_that_is_not_sqlite_is_named_and_left_as_it_was(tmp_path: Path) -> None:
    # sqlite3 opens anything and failed at the first statement with a bare
    # "DatabaseError: file is not a database", naming no file.
    from langgraph_ctx.storage.checkpointers import checkpointer_from_url
    from langgraph_ctx.storage.events import SQLiteEventSink

    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 100)
    attempts = [
        lambda: SQLiteArchive(str(notes)),
        lambda: SQLiteEventSink(notes),
        lambda: migrate(f"sqlite:///{notes}"),
        lambda: migration_status(f"sqlite:///{notes}"),
        lambda: checkpointer_from_url(f"sqlite:///{notes}").__enter__(),
    ]
    for attempt in attempts:
        with pytest.raises(ConfigurationError, match="is not a SQLite database") as info:
            attempt()
        assert str(notes) in str(info.value)
    assert notes.read_text() == "not a database\n" * 100


def test_sqlite_gets_the_same_tables_concurrently(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/nested/s.sqlite"
    barrier = threading.Barrier(8)

    def start(_: int) -> tuple[int, ...]:
        barrier.wait()
        return migrate(url).applied_now

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(start, range(8)))
    # Each migration applied exactly once, whichever threads applied them.
    assert sorted(v for applied in results for v in applied) == list(SHIPPED)
    status = migration_status(url)
    assert status.up_to_date and status.langgraph == "checkpoint tables present"
    with closing(sqlite3.connect(tmp_path / "nested" / "s.sqlite")) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"lgctx_archive", "lgctx_events", "lgctx_schema_versions", "checkpoints"} <= names


def test_sqlite_refuses_a_changed_migration(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.sqlite"
    migrate(url)
    with closing(sqlite3.connect(tmp_path / "s.sqlite")) as conn, conn:
        conn.execute("UPDATE lgctx_schema_versions SET checksum = 'bad' WHERE version = 1")
    with pytest.raises(ConfigurationError, match="0001_archive"):
        migrate(url)


def test_sqlite_status_creates_no_file(tmp_path: Path) -> None:
    status = migration_status(f"sqlite:///{tmp_path}/absent.sqlite")
    assert not status.up_to_date and not (tmp_path / "absent.sqlite").exists()


def test_sqlite_migration_matches_the_table_sqlite_archive_creates(tmp_path: Path) -> None:
    # SQLiteArchive migrates the file it opens: an archive-first file and a
    # migrate-first file end with one and the same table, and nothing is left to apply.
    SQLiteArchive(str(tmp_path / "a.sqlite")).close()
    migrate(f"sqlite:///{tmp_path}/b.sqlite")

    def shape(path: Path) -> tuple[object, ...]:
        with closing(sqlite3.connect(path)) as conn:
            columns = conn.execute("PRAGMA table_info(lgctx_archive)").fetchall()
            indexes = conn.execute("PRAGMA index_list(lgctx_archive)").fetchall()
            return tuple(columns), tuple(sorted(i[1:3] for i in indexes))

    assert shape(tmp_path / "a.sqlite") == shape(tmp_path / "b.sqlite")
    assert migrate(f"sqlite:///{tmp_path}/a.sqlite").applied_now == ()


# -- from an installed wheel ---------------------------------------------------


def test_migrate_from_an_installed_wheel(
    postgres_db: str, tmp_path: Path, built_wheel: Path
) -> None:
    # Install the wheel as a user would get it into a fresh virtualenv (no
    # dependencies: those come from this environment's site-packages, added by a .pth
    # file, whose own .pth files, like the editable install's, are not processed).
    wheel = built_wheel
    shipped = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".sql")]
    assert sorted(shipped) == sorted(
        f"langgraph_ctx/storage/sql/{m.label}.{d}.sql"
        for d in ("postgres", "sqlite")
        for m in load_migrations(d)  # type: ignore[arg-type]
    )
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", wheel],
        check=True,
        capture_output=True,
    )
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run(
        [python, "-c", "import langgraph_ctx; print(langgraph_ctx.__file__)"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert where.startswith(str(env_dir)), where
    script = env_dir / "bin" / "langgraph-ctx"
    for args, code in ((["--status"], 1), ([], 0), (["--status"], 0)):
        done = subprocess.run(
            [script, "migrate", "--database-url", postgres_db, *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == code, done.stdout + done.stderr
    assert "0002_events" in done.stdout and "applied" in done.stdout
    assert rows(postgres_db, "SELECT version FROM lgctx_schema_versions ORDER BY 1") == [
        (v,) for v in SHIPPED
    ]
