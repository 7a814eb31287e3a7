"""Long-term memory and the text tools that rank it.

``memory``: :class:`MemoryBank`, four levels of memory in a LangGraph store,
scoped per user or tenant. ``text``: the package's one text module (words,
terms, the stop list, the sentence splitter and BM25), used by recall, tool
search, the topic-change test, the think node, the extractive summarizer and
entity extraction alike.
"""

from langgraph_ctx.retrieval.memory import (
    Level,
    Memory,
    MemoryBank,
    MemoryOptions,
    SessionSummary,
    remember_tool,
)

__all__ = ["Level", "Memory", "MemoryBank", "MemoryOptions", "SessionSummary", "remember_tool"]
