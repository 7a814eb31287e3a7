"""Where sessions and the package's own tables live: SQLite, PostgreSQL or memory, from one URL.

- ``urls``: parsing database URLs, and redacting their passwords;
- ``checkpointers``: LangGraph checkpointers from a URL, sync and async;
- ``archive``: the archive of original messages (in memory, SQLite);
- ``events``: the context event log in SQLite;
- ``postgres``: the archive and event log in PostgreSQL;
- ``locks``: one run per thread at a time, across processes;
- ``migrations``: the versioned SQL in ``sql/`` and the runner that applies it.

psycopg is the optional ``postgres`` extra: nothing here imports it until a
PostgreSQL URL is used.
"""

from langgraph_ctx.storage.archive import (
    InMemoryArchive,
    MessageArchive,
    SQLiteArchive,
    archive_from_url,
)
from langgraph_ctx.storage.checkpointers import (
    async_checkpointer_from_url,
    checkpointer_from_url,
)
from langgraph_ctx.storage.events import SQLiteEventSink
from langgraph_ctx.storage.locks import ThreadLock, arun_exclusive, run_exclusive
from langgraph_ctx.storage.migrations import MigrationStatus, migrate, migration_status
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink
from langgraph_ctx.storage.urls import redact_url

__all__ = [
    "InMemoryArchive",
    "MessageArchive",
    "MigrationStatus",
    "PostgresArchive",
    "PostgresEventSink",
    "SQLiteArchive",
    "SQLiteEventSink",
    "ThreadLock",
    "archive_from_url",
    "arun_exclusive",
    "async_checkpointer_from_url",
    "checkpointer_from_url",
    "migrate",
    "migration_status",
    "redact_url",
    "run_exclusive",
]
