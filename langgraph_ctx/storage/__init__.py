"""Where sessions and the package's own tables live: SQLite, PostgreSQL or memory, from one URL.

- ``urls``: parsing database URLs (``_redact`` hides their passwords);
- ``checkpointers``: every store from a URL: LangGraph checkpointers, sync
  and async, and the archive;
- ``stores``: the archive and the event log in a checkpointer's own database
  (what ``create_context_agent`` keeps a session's originals and events in);
- ``archive``: the archive of original messages (in memory, SQLite), searchable
  (``hits``: what a search returns and what it indexes; ``_passages``: the
  passage rows the SQL archives write, and their backfill on migrate);
- ``events``: the context event log in SQLite;
- ``postgres``: the archive and event log in PostgreSQL (``_pgtable`` below it);
- ``memory_index``: lexical indexes of long-term memories in SQLite and PostgreSQL;
- ``locks``: one run per thread at a time, across processes;
- ``delta_cache``: a checkpointer wrapper that resumes each thread's delta-channel
  reads from the last one (:class:`DeltaReadCache`);
- ``migrations``: the versioned SQL in ``sql/`` and the runner that applies it
  (``_versions``, ``_sqlite_migrations``, ``_pg_migrations`` below it);
- ``_fts``, ``_pgsearch``: search over SQLite's and PostgreSQL's full-text indexes.

The modules form layers; each imports only from layers below its own, so
there is no import cycle, not even through a function-level import
(``tests/test_storage_layers.py`` checks it):

1. ``_redact``, ``_versions`` (what a migration is), ``hits``, ``_fts``, ``delta_cache``,
   ``retention`` (which checkpoints a thread keeps);
2. ``urls``, ``pgconn`` (PostgreSQL connections), ``_passages``, ``retaining`` (the
   savers that prune);
3. ``_sqlite_migrations``, ``_pg_migrations`` (each dialect's runner);
4. ``_base`` (what stores share), ``migrations``, ``_pgsearch``;
5. ``archive``, ``events``, ``locks``, ``_pgtable``;
6. ``postgres``, ``memory_index``;
7. ``checkpointers``;
8. ``stores``.

psycopg is the optional ``postgres`` extra: nothing here imports it until a
PostgreSQL URL is used.
"""

from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive, SQLiteArchive
from langgraph_ctx.storage.events import SQLiteEventSink
from langgraph_ctx.storage.memory_index import PostgresMemoryIndex, SQLiteMemoryIndex
from langgraph_ctx.storage.postgres import PostgresArchive, PostgresEventSink

__all__ = [
    "InMemoryArchive",
    "MessageArchive",
    "PostgresArchive",
    "PostgresEventSink",
    "PostgresMemoryIndex",
    "SQLiteArchive",
    "SQLiteEventSink",
    "SQLiteMemoryIndex",
]
