"""The ``langgraph-ctx`` command: ``demo``, ``inspect``, ``migrate``."""

from langgraph_ctx.cli.commands import main

__all__ = [
    "main",
]
