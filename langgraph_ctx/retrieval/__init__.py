"""Long-term memory and the text tools that rank it.

``memory``: :class:`MemoryBank`, four levels of memory in a LangGraph store,
scoped per user or tenant, in any store or in the running graph's
(:class:`RuntimeStore`, for LangGraph Server). ``index``: lexical search kept up to date on write
(:class:`LexicalIndex`, the :class:`TextIndex` protocol, and the MaxScore rounds
the SQL backends share), used by the memory bank and the archive. ``text``: the
package's one text module (words, terms, the stop list, the sentence splitter
and BM25), used by recall, tool search, the topic-change test, the think node,
the extractive summarizer and entity extraction alike.
"""

from langgraph_ctx.retrieval.index import TextIndex

__all__ = [
    "TextIndex",
]
