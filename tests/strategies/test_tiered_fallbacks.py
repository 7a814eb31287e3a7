"""Why tiered compression's summarizer fell back travels with each compression, not
through a module-level context variable (issue 32)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from langchain_core.messages import AIMessage, HumanMessage

from langgraph_ctx.compression import ChatModelSummarizer
from langgraph_ctx.strategies import TieredCompression
from langgraph_ctx.strategies.tiered.summaries import ReportingSummarizer, reporting
from langgraph_ctx.testing import ScriptedChatModel

MESSAGES = [
    HumanMessage("Order SO-48213 for Contoso ships from Rotterdam on 2025-03-14.", id="u1"),
    AIMessage("Noted: SO-48213, Rotterdam, 2025-03-14.", id="a1"),
]


def test_each_compression_collects_only_its_own_fallbacks() -> None:
    # An empty reply is a fallback ("empty"); the model is shared by every call.
    compression = TieredCompression(summarizer=ScriptedChatModel(default=""))
    shared = compression.summarizer
    assert isinstance(shared, ReportingSummarizer)
    lists: list[list[str]] = [[] for _ in range(8)]

    def compress(i: int) -> str:
        summarizer = reporting(shared, lists[i])
        if i % 2:  # half of them never call the model: nothing to report
            return ""
        return summarizer.summarize(MESSAGES, max_tokens=60)

    with ThreadPoolExecutor(4) as pool:
        texts = list(pool.map(compress, range(8)))
    assert lists == [["empty"] if i % 2 == 0 else [] for i in range(8)]
    assert all("SO-48213" in t for t in texts[::2])  # the extractive fallback's summary
    assert shared.on_fallback is None  # the shared summarizer keeps no one's reasons


def test_a_summarizer_given_ready_made_keeps_its_own_hook() -> None:
    seen: list[str] = []
    own = ChatModelSummarizer(
        ScriptedChatModel(default=""), on_fallback=lambda r, e: seen.append(r)
    )
    compression = TieredCompression(summarizer=own)
    reasons: list[str] = []
    assert reporting(compression.summarizer, reasons) is own
    own.summarize(MESSAGES, max_tokens=60)
    assert seen == ["empty"] and reasons == []
