"""Apply an edit action inside a middleware hook: archive, persist, record.

``yield from apply_edits(view, ctx, operations, archive=..., source=self.name)``
inside a ``before`` hook returns the view the node should see. In order:

1. plan (:func:`~langgraph_ctx.edits.core.plan_edits`); an invalid action is
   recorded as ``edit_rejected`` with its reason and the view is returned as
   it was: nothing persisted, nothing archived;
2. archive every original leaving the active state (same thread, namespace
   and ids; the reason the caller gives, ``edited`` by default), before
   anything else: if the archive fails, ``edit_failed`` is recorded and, again,
   nothing changes;
3. persist the new history (it lands with the node's update, in the same
   step: a crash before the step commits leaves the old history, and the
   re-run archives the same ids again, a no-op);
4. record ``context_edit`` with every operation and its rationale: the
   rationale goes to the ledger only, never into a message.

What is archived and persisted is the message **as the state holds it**, not as
an earlier layer showed it for this call: pre-flight's pair repair shows a tool
result cut off from its call (a user message between them) as an assistant
note, and that note must neither replace the result in the archive nor in the
state (the repair is redone on every call). Only messages no edit made are
mapped back, by id.

**An id archived before, with other content** (a client that reuses message
ids, so ``u2`` comes back with new text after the first ``u2`` was compressed):
the archive's write is idempotent by id (a retried step), so the new text would
be skipped and lost. It is archived under the first free key ``<id>~<n>``
instead, the original keeping its own key (summaries and glimpses that name it
still find it), and ``archive_id_collision`` records both keys. A retried step
finds the same text under the same ``~n`` key and writes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage
from langgraph.channels.delta import DeltaChannel

from langgraph_ctx import ledger
from langgraph_ctx.edits.core import EditPlan, EditRejected, Protection, is_edited, plan_edits
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.parts import Collision, EditNote, Failure
from langgraph_ctx.markers import is_compacted, is_summary
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, View
from langgraph_ctx.pipeline.context import graph_namespace
from langgraph_ctx.state import delta_messages
from langgraph_ctx.storage.archive import MessageArchive


def consult(
    call: Callable[[], Any], acall: Callable[[], Awaitable[Any]], *, timeout: float | None
) -> Hook[tuple[Any, Failure | None]]:
    """Ask a manager (a model or a policy) for its answer, under ``timeout``.

    ``(answer, None)``, or ``(None, why)`` with the ledger fields of a failure
    (``reason``: timeout or error, and the error): a manager that fails leaves
    the context as it was, and the agent's call goes on.
    """
    try:
        return (yield IOCall(call, acall, timeout=timeout)), None
    except Exception as exc:
        reason = "timeout" if isinstance(exc, TimeoutError) else "error"
        return None, Failure(reason=reason, error=f"{type(exc).__name__}: {exc}")


def check_rewritable(builder: Any, middleware: str) -> None:
    """Refuse, at wiring, a graph whose ``messages`` an edit cannot rewrite.

    For a middleware's ``check_graph``: the update :meth:`EditPlan.update` writes
    starts with ``RemoveMessage(REMOVE_ALL)``, which LangGraph's own delta reducer
    ignores: the history would never shrink, and every edit would add copies. A
    ``DeltaChannel`` on :func:`~langgraph_ctx.state.delta_messages` (as
    :class:`~langgraph_ctx.state.DeltaContextState` has) honours it.
    """
    channel = builder.channels.get("messages")
    if channel is None:
        why = "has no 'messages'"
    elif isinstance(channel, DeltaChannel) and channel.reducer is not delta_messages:
        why = "keeps 'messages' in a DeltaChannel whose reducer ignores REMOVE_ALL"
    else:
        return
    raise ConfigurationError(
        middleware,
        f"the graph's state {why}, which edits cannot rewrite; use "
        "Annotated[list[AnyMessage], add_messages] (as ContextState does) or "
        "DeltaChannel(delta_messages) (as DeltaContextState does)",
    )


def apply_edits(
    view: View,
    ctx: CallContext,
    operations: Iterable[Any],
    *,
    archive: MessageArchive,
    source: str,
    pin_task: bool = True,
    rules: Protection = "manager",
    reason: str | Callable[[BaseMessage], str] = "edited",
    data: EditNote | None = None,
) -> Hook[tuple[View, EditPlan | None]]:
    """Apply ``operations`` to ``view["messages"]``; returns the new view and the plan.

    The plan is ``None`` when nothing changed (rejected, failed, or no
    operation). ``pin_task``, ``rules``: what is protected
    (:data:`~langgraph_ctx.edits.core.Protection`). ``reason``: the archive's
    reason for each original (one for all, or by message: compression names the
    summary that replaces it). ``data`` is added to the ledger entry (a trigger,
    a round).
    """
    messages = list(view.get("messages") or ())
    extra = data or EditNote()
    try:
        plan = plan_edits(messages, operations, pin_task=pin_task, rules=rules)
    except EditRejected as exc:
        ctx.record(
            "edit_rejected",
            ledger.EditRejected(
                source=source, reason=exc.reason, op=exc.op, detail=exc.detail, **extra
            ),
        )
        return view, None
    if not plan.changed:
        return view, None
    thread, namespace = ctx.thread_id or "default", graph_namespace(ctx.config)
    in_state = _as_in_state(ctx, plan)
    batches = _by_reason([in_state.get(str(m.id), m) for m in plan.removed], reason)
    collisions: list[Collision] = []

    def get(key: str) -> BaseMessage | None:
        return archive.get(thread, key, namespace=namespace)

    async def aget(key: str) -> BaseMessage | None:
        return await archive.aget(thread, key, namespace=namespace)

    def put() -> None:
        collisions.clear()  # a retried IO call starts over
        for why, batch in batches:
            keyed = _rekey(_rekeying(batch, collisions), get)
            archive.put(thread, keyed, reason=why, namespace=namespace)

    async def aput() -> None:
        collisions.clear()
        for why, batch in batches:
            keyed = await _arekey(_rekeying(batch, collisions), aget)
            await archive.aput(thread, keyed, reason=why, namespace=namespace)

    try:
        yield IOCall(put, aput)
    except Exception as exc:
        ctx.record(
            "edit_failed",
            ledger.EditFailed(
                source=source, reason="archive", error=f"{type(exc).__name__}: {exc}"
            ),
        )
        return view, None
    for collision in collisions:
        ctx.record("archive_id_collision", ledger.ArchiveIdCollision(source=source, **collision))
    made = {id(m) for m in plan.made}
    kept = [m if id(m) in made else in_state.get(str(m.id), m) for m in plan.messages]
    ctx.persist(source, messages=[*plan.update()[:1], *kept])
    count = ctx.session.cache.count_of
    before = sum(count(m) for m in plan.removed)
    ctx.session.cache.forget([str(m.id) for m in plan.removed])
    after = sum(count(m) for m in plan.made)
    if ctx.usage is not None:
        ctx.adjust_usage("messages", after - before)
    ctx.record(
        "context_edit",
        ledger.ContextEdit(
            **plan.ledger(), source=source, tokens_before=before, tokens_after=after, **extra
        ),
    )
    return view.replace(messages=plan.messages), plan


def _as_in_state(ctx: CallContext, plan: EditPlan) -> dict[str, BaseMessage]:
    """The state's own message for each id this call's view shows otherwise (see
    the module): empty when no layer before showed a message differently. What an
    edit made (a result compacted in place keeps its id) stays as made: an earlier
    edit of this same call persisted it, and mapping it back would undo that."""
    made = {id(m) for m in plan.made}
    state = {str(m.id): m for m in ctx.state.get("messages") or () if m.id}
    return {
        key: state[key]
        for m in (*plan.removed, *plan.messages)
        if id(m) not in made
        and not _ours(m)
        and (key := str(m.id)) in state
        and state[key] is not m
    }


def _ours(message: BaseMessage) -> bool:
    # What an edit or compression made (a summary, a compacted result keeping its
    # original's id, a rewrite): its original is archived already, under that id.
    return is_summary(message) or is_compacted(message) or is_edited(message)


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    return (
        a.type == b.type
        and a.content == b.content
        and getattr(a, "tool_calls", None) == getattr(b, "tool_calls", None)
        and getattr(a, "tool_call_id", None) == getattr(b, "tool_call_id", None)
    )


def _free_key(message: BaseMessage, found: BaseMessage | None, n: int) -> str | None:
    """One step of the search for ``message``'s archive key: ``None`` once the key
    tried last (``found`` under it) is free or holds this very text."""
    if found is None or _same(found, message):
        return None
    return f"{message.id}~{n + 1}"


def _rekeying(
    batch: Sequence[BaseMessage], collisions: list[Collision]
) -> Generator[str, BaseMessage | None, list[BaseMessage]]:
    """``batch`` with each message whose id is archived with other content under
    the first free ``<id>~<n>`` key (or the one already holding it), noted in
    ``collisions``. Yields each key to look up and is sent what the archive holds
    there, so that the sync and the async archive calls drive one logic."""
    out: list[BaseMessage] = []
    for m in batch:
        key, n = str(m.id), 0
        while not _ours(m) and (nxt := _free_key(m, (yield key), n)) is not None:
            key, n = nxt, n + 1
        out.append(m if n == 0 else _keyed(m, key, collisions))
    return out


def _rekey(
    steps: Generator[str, BaseMessage | None, list[BaseMessage]],
    get: Callable[[str], BaseMessage | None],
    reply: BaseMessage | None = None,
) -> list[BaseMessage]:
    """:func:`_rekeying` run to its end on the sync archive lookup ``get`` (``reply``:
    what the last lookup found; ``None`` starts the generator)."""
    try:
        while True:
            reply = get(steps.send(reply))
    except StopIteration as done:
        return cast(list[BaseMessage], done.value)


async def _arekey(
    steps: Generator[str, BaseMessage | None, list[BaseMessage]],
    aget: Callable[[str], Awaitable[BaseMessage | None]],
    reply: BaseMessage | None = None,
) -> list[BaseMessage]:
    """:func:`_rekeying` run to its end on the async archive lookup ``aget``."""
    try:
        while True:
            reply = await aget(steps.send(reply))
    except StopIteration as done:
        return cast(list[BaseMessage], done.value)


def _keyed(message: BaseMessage, key: str, collisions: list[Collision]) -> BaseMessage:
    collisions.append(Collision(id=str(message.id), archived_as=key))
    return message.model_copy(update={"id": key})


def _by_reason(
    removed: Sequence[BaseMessage], reason: str | Callable[[BaseMessage], str]
) -> list[tuple[str, list[BaseMessage]]]:
    """The originals in archive batches, one per reason (history order within each)."""
    if isinstance(reason, str):
        return [(reason, list(removed))]
    batches: dict[str, list[BaseMessage]] = {}
    for m in removed:
        batches.setdefault(reason(m), []).append(m)
    return list(batches.items())
