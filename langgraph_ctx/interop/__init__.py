"""Adapters to other agent frameworks. Each imports its framework only when used.

``from langgraph_ctx.interop import ContextMiddleware`` needs ``langchain>=1.0``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ContextMiddleware",
]


def __getattr__(name: str) -> Any:
    # Lazy: importing this package must not import langchain (an optional dependency).
    if name == "ContextMiddleware":
        from langgraph_ctx.interop.langchain import ContextMiddleware

        return ContextMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
