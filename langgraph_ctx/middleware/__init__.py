"""Built-in middleware, one per module."""

from langgraph_ctx.middleware.preflight import PreflightCheck

__all__ = ["PreflightCheck"]
