"""Long-term memory and the text tools that rank it.

``memory``: :class:`MemoryBank`, four levels of memory in a LangGraph store,
scoped per user or tenant. ``text``: the package's one tokenizer, stop list
and BM25, used by recall, tool search, the extractive summarizer and entity
retention alike.
"""

from langgraph_ctx.retrieval.memory import Level, Memory, MemoryBank, SessionSummary, remember_tool

__all__ = ["Level", "Memory", "MemoryBank", "SessionSummary", "remember_tool"]
