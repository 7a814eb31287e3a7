"""Old module paths, kept working for one release with a ``DeprecationWarning``.

Release 0.2 grouped the flat modules of 0.1 into subpackages. ``import
langgraph_ctx.archive`` (or ``from langgraph_ctx.persistence import ...``)
still works and returns the module at its new path; release 0.3 drops these
aliases. Names imported from ``langgraph_ctx`` itself never moved.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

MOVED = {
    "langgraph_ctx.archive": "langgraph_ctx.storage.archive",
    "langgraph_ctx.call": "langgraph_ctx.pipeline.context",
    "langgraph_ctx.demo": "langgraph_ctx.cli.demo",
    "langgraph_ctx.entities": "langgraph_ctx.compression._entities",
    "langgraph_ctx.events": "langgraph_ctx.storage.events",
    "langgraph_ctx.extractive": "langgraph_ctx.compression._extractive",
    "langgraph_ctx.inspection": "langgraph_ctx.cli.inspect",
    "langgraph_ctx.layers": "langgraph_ctx.pipeline.chain",
    "langgraph_ctx.lexical": "langgraph_ctx.retrieval.text",
    "langgraph_ctx.locks": "langgraph_ctx.storage.locks",
    "langgraph_ctx.memory": "langgraph_ctx.retrieval.memory",
    "langgraph_ctx.nodes": "langgraph_ctx.agent.nodes",
    "langgraph_ctx.persistence": "langgraph_ctx.storage.checkpointers",
    "langgraph_ctx.pg": "langgraph_ctx.storage.postgres",
    "langgraph_ctx.plot": "langgraph_ctx.cli.plot",
    "langgraph_ctx.schema": "langgraph_ctx.storage.migrations",
    "langgraph_ctx.subagents": "langgraph_ctx.agent.subagents",
    "langgraph_ctx.summarizers": "langgraph_ctx.compression.summarizers",
    "langgraph_ctx.tiers": "langgraph_ctx.compression._tiers",
    "langgraph_ctx.urls": "langgraph_ctx.storage.urls",
}


def new_name(fullname: str) -> str | None:
    """Where the module once called ``fullname`` lives now, or ``None`` if it never moved."""
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.target}; the old path goes away in langgraph-ctx 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        """The target module is already executed."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        return None if new is None else importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    # First in line: once ``langgraph_ctx.nodes`` is aliased, the path finder would
    # otherwise load ``langgraph_ctx.nodes.think`` from the alias's __path__ as a
    # second copy of the module, with classes of its own.
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
