"""Built-in middleware, one per module."""

from langgraph_ctx.middleware.compression import TieredCompression
from langgraph_ctx.middleware.preflight import PreflightCheck

__all__ = ["PreflightCheck", "TieredCompression"]
