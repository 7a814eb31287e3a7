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

Tool calls and their results, pinned messages and compacted tool results are
left as they are. ``"none"`` leaves the prompt untouched.

The recall block is the largest per-call block, and a prompt cache cannot serve
it: it changes with every turn, so each turn pays for it and for the turn before
(the previous user message no longer carries it). ``recall_refresh="compression"``
trades freshness for cache hits: the block is kept byte-identical, as stable
context right after the summaries, until the stable prefix changes (a
compression rewrites it, and with it everything after it, anyway); then this
call's block replaces it. A kept block that no longer fits the room pre-flight
left is replaced at once, so the prompt never passes the red line for it. The
block lives in the session's memory only: a restarted process makes a new one.

:class:`ProviderPlacement` applies it to the view of its nodes and runs innermost
(after recall), and tells the built-in nodes (``call_llm``, ``think``), which add
their own system prompt and thought after the middleware ran, to apply it to the
final prompt as well (:func:`final_placement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.markers import KEY, is_ephemeral
from langgraph_ctx.pipeline import CallContext, Middleware, View, current_context

Placement = Literal["system", "pair", "none"]
PLACEMENTS: tuple[str, ...] = get_args(Placement)
RecallRefresh = Literal["call", "compression"]
REFRESHES: tuple[str, ...] = get_args(RecallRefresh)
_KEPT = "placement.recall"
"""``ctx.session.scratch`` key: ``(prefix signature, kept recall block or None)``."""
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
        recall_refresh: RecallRefresh = "call",
        **kwargs: Any,
    ) -> None:
        """
        Args:
            placement: ``"system"`` (summaries merged into the leading system
                message), ``"pair"`` (a user/assistant pair each), or ``"none"``.
            recall_refresh: ``"call"`` (the recall block of each call, in its last
                user message: the freshest memories) or ``"compression"`` (one
                block kept in the stable prefix until the next compression: the
                most prompt-cache hits). See the module docstring.
        """
        super().__init__(**kwargs)
        self.placement = check_placement(placement, "ProviderPlacement.placement")
        if recall_refresh not in REFRESHES:
            raise ConfigurationError(
                "ProviderPlacement.recall_refresh",
                f"must be one of {list(REFRESHES)}, got {recall_refresh!r}",
            )
        self.recall_refresh = recall_refresh

    def before(self, view: View, ctx: CallContext) -> View:
        ctx.annotations[ANNOTATION] = self.placement
        messages = view.get("messages")
        if not messages:
            return view
        if self.recall_refresh == "compression" and self.placement != "none":
            messages = keep_recall(messages, ctx)
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


def keep_recall(messages: Sequence[BaseMessage], ctx: CallContext) -> list[BaseMessage]:
    """``messages`` with the session's kept recall block in place of this call's, as
    stable context after the summaries (see the module docstring).

    The kept block's tokens are reserved (``ctx.session.reserved``): pre-flight
    counted them as system content and recall counted this call's block as
    auxiliary, so the one not sent is taken back out of the usage report.
    """
    out = list(messages)
    at = next((j for j, m in enumerate(out) if _is_recall(m)), None)
    fresh = out.pop(at) if at is not None else None
    fresh_raw = ctx.counter.count_message(fresh) if fresh is not None else 0
    signature = hash(tuple((m.id, _text(m)) for m in out if _is_stable_system(m)))
    kept = ctx.session.scratch.get(_KEPT)
    block: BaseMessage | None
    if kept is not None and kept[0] == signature and kept[1] is not None and _fits(ctx, fresh_raw):
        block = kept[1]  # counted by pre-flight (reserved): recall's own count goes
        _take_back(ctx, "auxiliary", fresh_raw)
    else:  # the prefix changed (a compression) or the kept block no longer fits
        block = _stable(fresh) if fresh is not None else None  # counted by recall
        _take_back(ctx, "system", ctx.session.reserved.get(_KEPT, 0))
        ctx.session.scratch[_KEPT] = (signature, block)
        ctx.session.reserved[_KEPT] = ctx.counter.count_message(block) if block else 0
    if block is None:
        return out
    last = max((j for j, m in enumerate(out) if _is_stable_system(m)), default=-1)
    return [*out[: last + 1], block, *out[last + 1 :]]


def _take_back(ctx: CallContext, component: Literal["system", "auxiliary"], raw: int) -> None:
    if ctx.usage is not None and raw:
        ctx.adjust_usage(component, -raw)


def _is_recall(m: BaseMessage) -> bool:
    marks = m.additional_kwargs.get(KEY)
    return is_ephemeral(m) and isinstance(marks, dict) and "recall" in marks


def _stable(block: BaseMessage) -> BaseMessage:
    """The recall block as stable context: same text, no longer marked ephemeral."""
    marks = {k: v for k, v in block.additional_kwargs.get(KEY, {}).items() if k != "ephemeral"}
    return SystemMessage(block.content, id=block.id, additional_kwargs={KEY: marks})


def _fits(ctx: CallContext, fresh_raw: int) -> bool:
    """Whether the prompt, with the kept block (reserved) instead of this call's
    block (``fresh_raw`` tokens), stays under the red line."""
    if ctx.usage is None:
        return True
    return ctx.usage.total - ctx.session.calibration.apply(fresh_raw) <= ctx.budget.red_line


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
    if placement == "none":
        return list(messages)
    lead: list[BaseMessage] = []
    i = 0
    while i < len(messages) and _is_stable_system(messages[i]):
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
    return [*head, *_with_per_call(_fold_notes(body), per_call)]


def _is_stable_system(m: BaseMessage) -> bool:
    return m.type == "system" and not is_ephemeral(m)


def _pair(stable: Sequence[BaseMessage]) -> list[BaseMessage]:
    text = "\n\n".join(_text(m) for m in stable)
    return [
        HumanMessage(text, id=stable[0].id, additional_kwargs={KEY: {"placed": True}}),
        AIMessage(ACKNOWLEDGEMENT, additional_kwargs={KEY: {"placed": True}}),
    ]


def _merge_system(lead: Sequence[BaseMessage]) -> BaseMessage:
    if len(lead) == 1:
        return lead[0]
    return SystemMessage(_join([m.content for m in lead]), id=lead[0].id)


def _with_per_call(body: list[BaseMessage], per_call: Sequence[BaseMessage]) -> list[BaseMessage]:
    if not per_call:
        return body
    block = "\n\n".join(_text(m) for m in per_call)
    at = next((j for j in range(len(body) - 1, -1, -1) if body[j].type == "human"), None)
    if at is None:  # nothing to attach it to: it closes the prompt as a user message
        return [*body, HumanMessage(block, additional_kwargs={KEY: {"placed": True}})]
    last = body[at]
    merged = last.model_copy(update={"content": _join([block, last.content])})
    return [*body[:at], merged, *body[at + 1 :]]


def _fold_notes(body: list[BaseMessage]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in body:
        previous = out[-1] if out else None
        if isinstance(m, AIMessage) and isinstance(previous, AIMessage) and _is_note(previous):
            out[-1] = m.model_copy(update={"content": _join([previous.content, m.content])})
        else:
            out.append(m)
    return out


def _is_note(m: AIMessage) -> bool:
    marks = m.additional_kwargs.get(KEY)
    return isinstance(marks, dict) and bool(marks.get("note")) and not m.tool_calls


def _text(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else m.text


def _join(contents: Sequence[str | list[Any]]) -> str | list[Any]:
    """Contents joined by a blank line; content blocks (a ``cache_control`` mark, an
    image) are kept as blocks rather than flattened."""
    parts = [c for c in contents if c]
    if all(isinstance(c, str) for c in parts):
        return "\n\n".join(parts)  # type: ignore[arg-type]
    blocks: list[Any] = []
    for c in parts:
        blocks += [{"type": "text", "text": c}] if isinstance(c, str) else list(c)
    return blocks
