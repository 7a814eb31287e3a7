"""The benchmarks that use PostgreSQL run on the server LANGGRAPH_CTX_DATABASE_URL
names, the one variable a user sets for the CLI and the server example (issue 33)."""

from __future__ import annotations

import pytest


def test_recall_benchmark_uses_the_server_the_one_variable_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import recall  # benchmarks/recall.py (archive_search.py takes its server from it)

    url = "postgresql://bench@db.example:5433/postgres"
    monkeypatch.setenv("LANGGRAPH_CTX_DATABASE_URL", url)
    # Given a URL, no throw-away server is started: the URL is what the runs connect to.
    with recall.postgres_server() as used:
        assert used == url
