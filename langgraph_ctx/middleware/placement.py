"""Provider placement: what the pipeline adds reaches the model in a form every provider accepts.

The checkpointed history keeps our messages where compression put them and
marked as they are: ``[Conversation Summary]`` system messages between the
pinned messages and the protected window, so compression, ``inspect`` and
recall still find them. Providers disagree on system messages in the middle of
a conversation: OpenAI, Mistral, Ollama and Groq take them where they are;
Google and Bedrock hoist every one into the system prompt; Anthropic refuses
the request (``Received multiple non-consecutive system messages``). So the
prompt of each call is rewritten (ephemeral: the checkpoint never sees it):

- **stable** context: system messages after the leading ones that are not
  per-call (summaries, meta-summaries, a pinned system message). With
  ``"system"`` (the default) they are merged, in order, into the one leading
  system message; with ``"pair"`` each run of them becomes a user message and
  an assistant acknowledgement, where it was (as LangChain's
  ``SummarizationMiddleware`` puts its summary in a user message). Either way
  they form, with the system prompt and the pinned messages, a prefix that
  stays byte-identical from one compression to the next: what a provider's
  prompt cache serves.
- **per-call** context: messages marked ephemeral (the recall block, the
  current thought, the ``think`` instructions), which change on every call. They
  go into the last user message, in front of its text: after the whole stable
  prefix and the earlier history, so they cost the cache only the current turn.
  Never a message of their own, so no provider sees two user turns in a row or a
  user turn after a tool result it would reject.
- a ``[plan]`` note (an assistant message) is folded into the assistant message
  right after it, so no provider sees two assistant turns in a row.
- for a client that sends an assistant message carrying tool calls with empty
  content (``langchain-mistralai``: :func:`drops_text_beside_calls`), the text
  of such a message (the ``[plan]`` note folded into it, BACM's ``[step ...]``
  tag, the model's own words) is moved to the front of the first tool result
  answering it (:func:`text_off_calls`), or the model would never see it.
- a message that grows by appending (ARC's interaction memory, marked with
  where each part starts: :func:`~langgraph_ctx.markers.appended_parts`) is sent
  as one text block per part, the same text: the previous call's version of it
  then ends at a block boundary, the only place Anthropic's cache looks for an
  entry (:mod:`~langgraph_ctx.history.breakpoints` marks it there).

Tool calls and their results, pinned messages and compacted tool results are
left as they are. ``"none"`` leaves the prompt untouched.

The recall block is the largest per-call block, and it changes with every turn:
placed per call, each turn would pay for it and for the turn before (the previous
user message no longer carries it). ``recall_refresh`` decides (see
:mod:`~langgraph_ctx.middleware._recall_refresh`): ``"delta"`` (the default)
keeps each turn's new lines in that turn's user message, byte-identical until
the next compression, so a turn pays only for what it adds; ``"compression"``
keeps one block in the stable prefix until the next compression; ``"call"``
places each call's block as per-call context.

:class:`ProviderPlacement` applies it to the view of its nodes and runs innermost
(after recall), and tells the built-in nodes (``call_llm``, ``think``), which add
their own system prompt and thought after the middleware ran, to apply it to the
final prompt as well (:func:`final_placement`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Literal, get_args

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langgraph_ctx._checks import check_number
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import KEY, PER_CALL, appended_parts, is_ephemeral, part_count
from langgraph_ctx.middleware._content import is_stable_system, join_contents, text_of
from langgraph_ctx.middleware._recall_refresh import (
    DEFAULT_PER_TURN,
    delta_recall,
    keep_recall,
    release,
)
from langgraph_ctx.pipeline import CallContext, Middleware, View
from langgraph_ctx.pipeline.context import current_context

Placement = Literal["system", "pair", "none"]
PLACEMENTS: tuple[str, ...] = get_args(Placement)
RecallRefresh = Literal["delta", "call", "compression"]
REFRESHES: tuple[str, ...] = get_args(RecallRefresh)
ANNOTATION = "placement"
"""``ctx.annotations`` key: the placement the nodes apply to the prompt they build."""
ACKNOWLEDGEMENT = "Understood."


class ProviderPlacement(Middleware):
    """Places summaries and per-call context where every provider accepts them."""

    name = "placement"
    priority = 1000
    """Innermost: after recall (40) and anything else that adds messages."""

    def __init__(
        self,
        placement: Placement = "system",
        *,
        recall_refresh: RecallRefresh = "delta",
        recall_per_turn: float | None = DEFAULT_PER_TURN,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            placement: ``"system"`` (summaries merged into the leading system
                message), ``"pair"`` (a user/assistant pair each), or ``"none"``.
            recall_refresh: ``"delta"`` (each turn's new recall lines kept in
                its user message until the next compression: fresh recall, and
                a turn pays the cache only for what it adds), ``"call"`` (the
                block of each call in its last user message) or
                ``"compression"`` (one block kept in the stable prefix until the
                next compression: the fewest recall tokens, the least fresh).
                See :mod:`~langgraph_ctx.middleware._recall_refresh`.
            recall_per_turn: with ``"delta"``, ``None`` (the default): a turn
                adds every line of its call's block not shown yet (recall sized
                the block to the room the prompt leaves); a number: the most one
                turn adds, as a share of recall's limit (its best new lines;
                always the best one), which trades answers for fewer tokens.
        """
        super().__init__(**kwargs)
        self.placement = check_placement(placement, "ProviderPlacement.placement")
        if recall_refresh not in REFRESHES:
            raise ConfigurationError(
                "ProviderPlacement.recall_refresh",
                f"must be one of {list(REFRESHES)}, got {recall_refresh!r}",
            )
        self.recall_refresh = recall_refresh
        self.recall_per_turn = (
            None
            if recall_per_turn is None
            else check_number("ProviderPlacement.recall_per_turn", recall_per_turn, above=0.0)
        )
        if recall_per_turn is not None and recall_per_turn > 1:  # past 1 it means no more
            raise ConfigurationError(
                "ProviderPlacement.recall_per_turn",
                f"must be a share of recall's limit in (0, 1], got {recall_per_turn}",
            )

    def before(self, view: View, ctx: CallContext) -> View:
        ctx.annotations[ANNOTATION] = self.placement
        messages = view.get("messages")
        if not messages:
            return view
        if self.placement != "none" and self.recall_refresh == "delta":
            messages = delta_recall(messages, ctx, self.recall_per_turn)
        elif self.placement != "none" and self.recall_refresh == "compression":
            messages = keep_recall(messages, ctx)
        else:
            release(ctx)
        placed = place_messages(messages, self.placement)
        remeasure(messages, placed, ctx)
        return view.replace(messages=placed)


def remeasure(
    before: Sequence[BaseMessage], after: Sequence[BaseMessage], ctx: CallContext
) -> None:
    """Bring the usage report to what is sent: merged and paired messages cost
    other tokens than the ones they replace (a message's overhead, a separator,
    an acknowledgement), and the prompt ceiling trusts the report.

    Only the messages placement made or took out are counted (cached by
    content): the summaries' merge and pairs are the same bytes from call to
    call, so this is one new count for the message a per-call block joins."""
    if ctx.usage is None:
        return
    kept = {id(m) for m in before} & {id(m) for m in after}
    count = ctx.session.cache.count_of
    added = sum(count(m) for m in after if id(m) not in kept)
    removed = sum(count(m) for m in before if id(m) not in kept)
    if added != removed:
        ctx.adjust_usage("messages", added - removed)


def check_placement(value: object, field: str) -> Placement:
    if value not in PLACEMENTS:
        raise ConfigurationError(field, f"must be one of {list(PLACEMENTS)}, got {value!r}")
    return value  # type: ignore[return-value]


def final_placement(default: Placement | None) -> Placement | None:
    """The placement a node applies to its final prompt: the one :class:`ProviderPlacement`
    chose for this call, else the node's own ``default`` (``None``: leave it as is)."""
    ctx = current_context()
    chosen = ctx.annotations.get(ANNOTATION) if ctx is not None else None
    return chosen if chosen in PLACEMENTS else default


def place_messages(
    messages: Sequence[BaseMessage], placement: Placement = "system"
) -> list[BaseMessage]:
    """``messages`` as a prompt every major provider accepts (see the module docstring).

    Deterministic: the same history gives the same bytes, so a prompt cache keeps
    hitting. Applying it again to its own output changes nothing but the order of
    per-call blocks already merged.
    """
    check_placement(placement, "placement")
    if placement == "none":
        return list(messages)
    lead: list[BaseMessage] = []
    i = 0
    while i < len(messages) and is_stable_system(messages[i]):
        lead.append(messages[i])
        i += 1
    per_call: list[BaseMessage] = []
    body: list[BaseMessage] = []
    deferred: list[BaseMessage] = []  # stable system messages met inside a tool exchange
    open_calls: set[str] = set()
    for m in messages[i:]:
        if is_ephemeral(m):
            per_call.append(m)
            continue
        if m.type == "system":
            if placement == "system":
                lead.append(m)
            elif open_calls:
                deferred.append(m)
            else:
                body += _pair([m])
            continue
        body.append(m)
        if isinstance(m, AIMessage) and m.tool_calls:
            open_calls = {str(c.get("id")) for c in m.tool_calls}
        elif m.type == "tool":
            open_calls.discard(str(getattr(m, "tool_call_id", "")))
        if not open_calls and deferred:
            body += _pair(deferred)
            deferred = []
    body += _pair(deferred) if deferred else []
    head = [_merge_system(lead)] if lead else []
    return [*head, *_with_per_call(fold_notes([_in_parts(m) for m in body]), per_call)]


def _in_parts(m: BaseMessage) -> BaseMessage:
    """A message that grows by appending (ARC's interaction memory) as one content
    block per part: the same text, and the previous call's version of it ends at a
    block boundary, where Anthropic's cache looks for an entry."""
    parts = appended_parts(m)
    if parts is None:
        return m
    return m.model_copy(update={"content": [{"type": "text", "text": p} for p in parts]})


def _pair(stable: Sequence[BaseMessage]) -> list[BaseMessage]:
    text = "\n\n".join(text_of(m) for m in stable)
    return [
        HumanMessage(text, id=stable[0].id, additional_kwargs={KEY: {"placed": True}}),
        AIMessage(ACKNOWLEDGEMENT, additional_kwargs={KEY: {"placed": True}}),
    ]


def _merge_system(lead: Sequence[BaseMessage]) -> BaseMessage:
    if len(lead) == 1:
        return lead[0]
    return SystemMessage(join_contents([m.content for m in lead]), id=lead[0].id)


def _with_per_call(body: list[BaseMessage], per_call: Sequence[BaseMessage]) -> list[BaseMessage]:
    if not per_call:
        return body
    block = "\n\n".join(text_of(m) for m in per_call)
    at = next((j for j in range(len(body) - 1, -1, -1) if body[j].type == "human"), None)
    if at is None:  # nothing to attach it to: it closes the prompt as a user message
        return [*body, HumanMessage(block, additional_kwargs={KEY: {"placed": True}})]
    last = body[at]
    # In front of the user's text; after the parts of a message that grows by
    # appending (ARC's memory, the last user message within a tool loop), whose
    # earlier parts must stay where the previous call had them.
    contents = [last.content, block] if part_count(last) else [block, last.content]
    marks = {**(last.additional_kwargs.get(KEY) or {}), PER_CALL: True}
    merged = last.model_copy(
        update={
            "content": join_contents(contents),
            "additional_kwargs": {**last.additional_kwargs, KEY: marks},
        }
    )
    return [*body[:at], merged, *body[at + 1 :]]


def fold_notes(body: list[BaseMessage]) -> list[BaseMessage]:
    """``body`` with each ``[plan]`` note folded into the assistant message after it
    (that message's id), as the prompt sends them."""
    out: list[BaseMessage] = []
    for m in body:
        previous = out[-1] if out else None
        if isinstance(m, AIMessage) and isinstance(previous, AIMessage) and _is_note(previous):
            out[-1] = m.model_copy(update={"content": join_contents([previous.content, m.content])})
        else:
            out.append(m)
    return out


def _is_note(m: AIMessage) -> bool:
    marks = m.additional_kwargs.get(KEY)
    return isinstance(marks, dict) and bool(marks.get("note")) and not m.tool_calls


def drops_text_beside_calls(model: object) -> bool:
    """Whether ``model``'s client sends an assistant message that carries tool calls
    with empty content: ``langchain_mistralai``'s ``ChatMistralAI`` (a subclass, or
    one with tools bound) does, whatever the message says. Looked up where it is
    already imported, so the package stays optional."""
    module = sys.modules.get("langchain_mistralai")
    chat = getattr(module, "ChatMistralAI", None)
    while chat is not None and not isinstance(model, chat) and hasattr(model, "bound"):
        model = model.bound  # a RunnableBinding from bind_tools
    return chat is not None and isinstance(model, chat)


def text_off_calls(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with the text of each assistant message that carries tool calls
    moved to the front of the first result answering it (see the module): a
    client that empties such a message then still sends every word of it. The
    same messages give the same bytes. A message with no result after it keeps
    its text (nothing else could carry it)."""
    out = list(messages)
    for i, m in enumerate(out):
        if not (isinstance(m, AIMessage) and m.tool_calls and text_of(m).strip()):
            continue
        calls = {str(c.get("id")) for c in m.tool_calls}
        at = next(
            (
                j
                for j in range(i + 1, len(out))
                if isinstance(r := out[j], ToolMessage) and str(r.tool_call_id) in calls
            ),
            None,
        )
        if at is None:
            continue
        result = out[at]
        out[at] = result.model_copy(update={"content": join_contents([text_of(m), result.content])})
        out[i] = m.model_copy(update={"content": ""})
    return out
