"""Glimpse: the model asks for an archived original back, by id, summary number or query.

A summary or a recall snippet says *that* something was said; ``glimpse`` gives
the model the words. A reference is resolved by the first
:class:`GlimpseSource` that knows it (:class:`ArchiveSource` by default:
message ids, ``#3`` for the originals summary 3 replaced, any other words as a
query); another strategy plugs its own lookup in as another source. A reference
that names no archived message is answered "not found", naming it; an id-like one
(:func:`looks_like_id`) that other messages mention gets them after that line.

Limits, so that a curious model cannot flood its own context:

- at most ``max_per_step`` glimpses per assistant message; further calls in the
  same message are answered with a refusal, not run;
- each answer capped in tokens: the smaller of ``max_tokens`` and the room the
  last call left under the red line, split between ``max_per_step`` glimpses.
  :class:`Glimpse` (the middleware) measures that room before each call and
  keeps it in ``state["session"]["glimpse_tokens"]``, which the tool reads: the
  answers land in the history, so the next call's pre-flight counts them as
  messages, and they fit the room they were sized for.

Usage: ``g = Glimpse(archive)``; add ``g`` to the pipeline and ``g.tool`` to the
agent's tools (``create_context_agent(..., recall=True)`` does both).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.prebuilt import InjectedState
from pydantic import BaseModel, Field

from langgraph_ctx._checks import check_has, check_int
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import GLIMPSE, SUMMARY_ID, summary_info
from langgraph_ctx.middleware._room import RoomFiller
from langgraph_ctx.pipeline import CallContext, View
from langgraph_ctx.pipeline.context import graph_namespace
from langgraph_ctx.storage.archive import MessageArchive, searchable_text
from langgraph_ctx.tokens import TokenCounter

SESSION_KEY = "glimpse_tokens"
"""``state["session"]`` key: the token cap of one glimpse, as the last call left it."""
_SUMMARY_REF = re.compile(r"^\s*(?:summary\s*)?#?\s*(\d+)\s*$", re.IGNORECASE)
NOT_FOUND = "not found"
"""The label of the line that says a reference named no archived message."""


def looks_like_id(reference: str) -> bool:
    """One token with a digit or a separator in it (``m5``, ``call_3``, a UUID): what a
    message id looks like, and a word to search for rarely does."""
    ref = reference.strip()
    return (
        bool(ref)
        and not any(c.isspace() for c in ref)
        and any(c.isdigit() or c in "-_:." for c in ref)
    )


@dataclass(frozen=True)
class GlimpseRequest:
    """What a source is asked: a reference, in a thread, with its active history."""

    reference: str
    thread_id: str
    namespace: str
    messages: Sequence[BaseMessage]
    """The active history (a summary still there names the ids it covers)."""


class GlimpseSource(Protocol):
    """Resolves a reference to text; ``None`` when the reference is not its own.

    Called from the tools node (in a worker thread under ``ainvoke``, as LangChain
    runs a sync tool), so one sync method serves both."""

    def resolve(self, request: GlimpseRequest) -> list[tuple[str, str]] | None:
        """``[(label, text), ...]``, best or oldest first, or ``None``: not mine."""
        ...


class ArchiveSource:
    """Archived originals: by message id, by summary number (``#3``), else by query."""

    def __init__(self, archive: MessageArchive, *, query_hits: int = 3) -> None:
        check_has("ArchiveSource.archive", archive, ("get", "search"), "a MessageArchive")
        self.archive = archive
        self.query_hits = query_hits

    def resolve(self, request: GlimpseRequest) -> list[tuple[str, str]] | None:
        t, ns, ref = request.thread_id, request.namespace, request.reference.strip()
        number = _SUMMARY_REF.match(ref)
        if number is not None:
            covers = _covers(request.messages, int(number.group(1)))
            if covers is None:
                summary = self.archive.get(t, SUMMARY_ID + number.group(1), namespace=ns)
                covers = _marked_covers(summary)
            return None if covers is None else self._ids(request, covers)
        found = self.archive.get(t, ref, namespace=ns)
        if found is not None:
            return [(ref, _text(found))]
        hits = self.archive.search(t, ref, limit=self.query_hits, namespace=ns)
        shown = [(h.message_id, _text(h.message)) for h in hits]
        if shown and looks_like_id(ref):
            # Searched as words, an id finds the messages that mention it (a summary
            # naming what it covers, a later reply): say so, or the model takes the
            # first of them for the message it asked for.
            note = f"no archived message has the id {ref!r}; archived messages that mention it:"
            return [(NOT_FOUND, note), *shown]
        return shown or None

    def _ids(self, request: GlimpseRequest, ids: Sequence[str]) -> list[tuple[str, str]]:
        got = (self.archive.get(request.thread_id, i, namespace=request.namespace) for i in ids)
        return [(i, _text(m)) for i, m in zip(ids, got, strict=True) if m is not None]


_SCHEMA = "glimpse_schema"
"""``ctx.session.scratch`` key: the raw tokens of the glimpse tool's schema, by tool."""


def _name(tool: Any) -> str:
    return str(tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", ""))


def _schema_raw(ctx: CallContext) -> int:
    """Raw tokens of the ``glimpse`` schemas among this call's tools (counted once a
    session per tool object, as pre-flight counts them)."""
    memo: dict[int, int] = ctx.session.scratch.setdefault(_SCHEMA, {})
    total = 0
    for tool in ctx.tools:
        if _name(tool) == GLIMPSE:
            if id(tool) not in memo:
                memo[id(tool)] = ctx.counter.count_tool(tool)
            total += memo[id(tool)]
    return total


def bound_tokens(ctx: CallContext) -> int:
    """Calibrated tokens of the ``glimpse`` tool's schema bound on this call (0 if it
    is not). Recall's, like its blocks: a strategy leaves it out of the prompt it
    decides on, and :class:`Glimpse` unbinds it for a call whose prompt would pass
    the red line with it. Counted, it folded or compressed the history earlier with
    recall on than off (BACM, 8K: one answer fewer)."""
    return ctx.session.calibration.apply(_schema_raw(ctx))


class Glimpse(RoomFiller):
    """Sizes the ``glimpse`` tool's answers to the room the last call left; owns the tool."""

    name = "glimpse"
    priority = 45
    """After recall (40): the room left is what recall did not take."""
    reads = ("session",)
    writes = ("session",)

    def __init__(
        self,
        archive: MessageArchive | None = None,
        *,
        sources: Sequence[GlimpseSource] = (),
        max_per_step: int = 3,
        max_tokens: int = 1_000,
        counter: TokenCounter | None = None,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            archive: read by an :class:`ArchiveSource`, tried after ``sources``.
            sources: resolvers tried first, in order (PACE's chunks, say).
            max_per_step: glimpses served per assistant message.
            max_tokens: the most one answer takes.
            counter: counts answers (default: tiktoken's ``cl100k_base``).
        """
        super().__init__(**kwargs)
        for s in sources:
            check_has("Glimpse.sources", s, ("resolve",), "a GlimpseSource")
        check_int("Glimpse.max_per_step", max_per_step, least=1)
        check_int("Glimpse.max_tokens", max_tokens, least=50)
        self.sources: list[GlimpseSource] = [*sources]
        if archive is not None:
            self.sources.append(ArchiveSource(archive))
        if not self.sources:
            raise ConfigurationError("Glimpse", "needs an archive or at least one source")
        self.max_per_step = max_per_step
        self.max_tokens = max_tokens
        self.counter = counter or TokenCounter()
        self.tool = glimpse_tool(self)

    def before(self, view: View, ctx: CallContext) -> View:
        # The schema is recall's, as its blocks are: it gives way to the history when
        # the prompt would pass the red line with it (the blocks kept from earlier
        # calls give way first, at placement), and a strategy leaves it out of what it
        # decides on (:func:`bound_tokens`). Else the history would be cut for it.
        report = ctx.measured()
        kept = ctx.session.calibration.apply(sum(ctx.session.reserved.values()))
        if report.total - kept > ctx.budget.red_line:
            schema = _schema_raw(ctx)
            ctx.tools = [t for t in ctx.tools if _name(t) != GLIMPSE]
            ctx.adjust_usage("tools", -schema)
        cap = max(50, min(self.max_tokens, self.room(ctx) // self.max_per_step))
        if (view.get("session") or {}).get(SESSION_KEY) != cap:
            ctx.persist(self.name, session={SESSION_KEY: cap})
        return view

    def answer(self, found: list[tuple[str, str]] | None, reference: str, cap: int) -> str:
        """The tool's text: each piece labelled, the whole within ``cap`` tokens."""
        if not found:
            if looks_like_id(reference) and not _SUMMARY_REF.match(reference):
                return (
                    f"Not found: no archived message has the id {reference!r}, "
                    "and none mentions it."
                )
            return f"Not found: nothing archived matches {reference!r}."
        out: list[str] = []
        used = 0
        for label, text in found:
            piece = f"[{label}] {text}"
            cost = self.counter.count_text(piece) + 1
            if used + cost > cap:
                left = cap - used - 12
                if left > 20:
                    out.append(_cut(piece, left, self.counter))
                rest = [lbl for lbl, _ in found[len(out) :]]
                if rest:
                    out.append(f"[... cut to {cap} tokens; not shown: {', '.join(rest[:10])}]")
                break
            out.append(piece)
            used += cost
        return "\n".join(out)


class _GlimpseCall(BaseModel):
    reference: str = Field(
        description="a message id (as recall or a compacted result names it), '#N' for "
        "the originals summary N replaced, or words to search the archive for"
    )
    tool_call_id: Annotated[str, InjectedToolCallId]
    state: Annotated[dict[str, Any], InjectedState]


def glimpse_tool(glimpse: Glimpse) -> BaseTool:
    """The ``glimpse`` tool: archived originals back, within :class:`Glimpse`'s limits."""

    def request(reference: str, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        configurable = config.get("configurable") or {}
        thread = str(configurable.get("thread_id") or "default")
        messages = list(state.get("messages") or ())
        return GlimpseRequest(reference, thread, graph_namespace(config), messages)

    def refusal(state: Mapping[str, Any], tool_call_id: str) -> str | None:
        rank = _rank_in_step(state.get("messages") or (), tool_call_id)
        if rank < glimpse.max_per_step:
            return None
        return (
            f"Refused: at most {glimpse.max_per_step} glimpses per step; "
            "ask for the most useful ones first, the rest next step."
        )

    def cap_of(state: Mapping[str, Any]) -> int:
        cap = (state.get("session") or {}).get(SESSION_KEY)
        return min(glimpse.max_tokens, cap) if isinstance(cap, int) else glimpse.max_tokens

    def run(
        reference: str, tool_call_id: str, state: dict[str, Any], config: RunnableConfig
    ) -> str:
        refused = refusal(state, tool_call_id)
        if refused:
            return refused
        r = request(reference, state, config)
        found = next((f for s in glimpse.sources if (f := s.resolve(r)) is not None), None)
        return glimpse.answer(found, reference, cap_of(state))

    return StructuredTool.from_function(
        func=run,  # under ainvoke, in a worker thread (LangChain's way with a sync tool)
        name=GLIMPSE,
        description=(
            "Read archived originals that summaries or recall only mention: by message id, "
            f"by '#N' (what summary N replaced), or by words. At most {glimpse.max_per_step} "
            "per step; long answers are cut."
        ),
        args_schema=_GlimpseCall,
    )


def _rank_in_step(messages: Sequence[BaseMessage], tool_call_id: str) -> int:
    """This call's place among the glimpse calls of the last assistant message."""
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    calls = [c.get("id") for c in (last.tool_calls if last else ()) if c["name"] == GLIMPSE]
    return calls.index(tool_call_id) if tool_call_id in calls else 0


def _covers(messages: Sequence[BaseMessage], seq: int) -> list[str] | None:
    for m in messages:
        info = summary_info(m)
        if info is not None and info.get("seq") == seq:
            return _marked_covers(m)
    return None


def _marked_covers(summary: BaseMessage | None) -> list[str] | None:
    info = summary_info(summary) if summary is not None else None
    covers = info.get("covers") if info else None
    return [str(i) for i in covers] if isinstance(covers, list) else None


def _text(message: BaseMessage) -> str:
    return " ".join(searchable_text(message).split())


def _cut(text: str, tokens: int, counter: TokenCounter) -> str:
    while text and counter.count_text(text) > tokens:
        text = text[: int(len(text) * 0.9)]
    return text + " [...]"
