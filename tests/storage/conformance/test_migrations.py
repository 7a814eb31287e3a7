"""Migrations on every durable backend: applying them again, or opening stores again on
a database in use, applies nothing and keeps every row (each dialect's runner, its
locking and its refusals are checked in tests/test_migrations.py)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from langgraph_ctx.storage.migrations import migrate, migration_status
from tests.storage.conformance.backends import Backend


def test_migrating_a_database_in_use_again_applies_nothing(durable_archive: Backend[Any]) -> None:
    archive = durable_archive.store
    archive.put("t", [HumanMessage("kept across migrations", id="m1")], reason="x")
    status = migration_status(durable_archive.url)
    assert status.up_to_date and all(m.applied_at for m in status.migrations)
    for _ in range(2):
        again = migrate(durable_archive.url)
        assert again.applied_now == () and again.up_to_date
    # A store opened again on it (SQLite's runs the migrations on opening).
    with durable_archive.reopen() as reopened:
        assert [m.text for m in reopened.list("t")] == ["kept across migrations"]
    assert migrate(durable_archive.url).applied_now == ()
    assert durable_archive.rows() == 1
    assert [h.message_id for h in archive.search("t", "migrations")] == ["m1"]
