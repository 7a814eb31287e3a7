"""Fixtures of the conformance suite: one per role, parametrized over that role's backends.

A fixture yields a :class:`~tests.storage.conformance.backends.Backend`; tests that need
storage to outlive its store (reopen, row counts) take a ``durable_*`` fixture, which
runs over the durable kinds only, and PostgreSQL's extended capabilities take
``postgres_archive``: a test runs on every backend it applies to, never skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage.conformance.backends import (
    DURABLE,
    KINDS,
    POSTGRES,
    Backend,
    Role,
    open_backend,
)


def _backends(name: str, role: Role, kinds: list[str]) -> Callable[..., Any]:
    @pytest.fixture(name=name, params=kinds)
    def fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend[Any]]:
        with open_backend(role, request.param, request, tmp_path) as backend:
            yield backend

    return fixture


archive_backend = _backends("archive_backend", "archive", KINDS["archive"])
durable_archive = _backends("durable_archive", "archive", DURABLE)
postgres_archive = _backends("postgres_archive", "archive", POSTGRES)
events_backend = _backends("events_backend", "events", KINDS["events"])
index_backend = _backends("index_backend", "memory_index", KINDS["memory_index"])
durable_index = _backends("durable_index", "memory_index", DURABLE)


@pytest.fixture
def archive(archive_backend: Backend[Any]) -> Any:
    """The archive under test, for checks that need nothing else of its backend."""
    return archive_backend.store
