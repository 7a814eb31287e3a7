"""The storage modules import in one direction: no cycle, not even through a lazy import."""

from __future__ import annotations

import grimp

# Bottom first, as the storage package's docstring lists them.
LAYERS = [
    {"_redact", "_versions", "hits", "_fts", "delta_cache", "retention"},
    {"urls", "pgconn", "_passages", "retaining"},
    {"_sqlite_migrations", "_pg_migrations"},
    {"_base", "migrations", "_pgsearch", "_pgvectors"},
    {"archive", "events", "locks", "_pgtable"},
    {"postgres", "memory_index"},
    {"checkpointers"},
    {"stores"},
]


def test_each_storage_module_imports_only_from_layers_below() -> None:
    graph = grimp.build_graph("langgraph_ctx", cache_dir=None)  # function-level imports too
    level = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    modules = {m.rsplit(".", 1)[1] for m in graph.find_children("langgraph_ctx.storage")}
    assert modules == set(level)  # a new module gets a place in the layers
    upward = [
        f"{name} -> {target}"
        for name in sorted(modules)
        for imported in graph.find_modules_directly_imported_by(f"langgraph_ctx.storage.{name}")
        if imported.startswith("langgraph_ctx.storage.")
        and level[target := imported.rsplit(".", 1)[1]] >= level[name]
    ]
    assert upward == []
