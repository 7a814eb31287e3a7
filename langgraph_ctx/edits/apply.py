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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.channels.delta import DeltaChannel

from langgraph_ctx.edits.core import EditPlan, EditRejected, Protection, plan_edits
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.pipeline import CallContext, Hook, IOCall, View, graph_namespace
from langgraph_ctx.state import delta_messages
from langgraph_ctx.storage.archive import MessageArchive


def consult(
    call: Callable[[], Any], acall: Callable[[], Awaitable[Any]], *, timeout: float | None
) -> Hook[tuple[Any, dict[str, str] | None]]:
    """Ask a manager (a model or a policy) for its answer, under ``timeout``.

    ``(answer, None)``, or ``(None, why)`` with the ledger fields of a failure
    (``reason``: timeout or error, and the error): a manager that fails leaves
    the context as it was, and the agent's call goes on.
    """
    try:
        return (yield IOCall(call, acall, timeout=timeout)), None
    except Exception as exc:
        reason = "timeout" if isinstance(exc, TimeoutError) else "error"
        return None, {"reason": reason, "error": f"{type(exc).__name__}: {exc}"}


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
    data: dict[str, Any] | None = None,
) -> Hook[tuple[View, EditPlan | None]]:
    """Apply ``operations`` to ``view["messages"]``; returns the new view and the plan.

    The plan is ``None`` when nothing changed (rejected, failed, or no
    operation). ``pin_task``, ``rules``: what is protected
    (:data:`~langgraph_ctx.edits.Protection`). ``reason``: the archive's
    reason for each original (one for all, or by message: compression names the
    summary that replaces it). ``data`` is added to the ledger entry (a trigger,
    a round).
    """
    messages = list(view.get("messages") or ())
    extra = data or {}
    try:
        plan = plan_edits(messages, operations, pin_task=pin_task, rules=rules)
    except EditRejected as exc:
        ctx.record(
            "edit_rejected",
            {"source": source, "reason": exc.reason, "op": exc.op, "detail": exc.detail, **extra},
        )
        return view, None
    if not plan.changed:
        return view, None
    thread, namespace = ctx.thread_id or "default", graph_namespace(ctx.config)
    batches = _by_reason(plan.removed, reason)

    def put() -> None:
        for why, batch in batches:
            archive.put(thread, batch, reason=why, namespace=namespace)

    async def aput() -> None:
        for why, batch in batches:
            await archive.aput(thread, batch, reason=why, namespace=namespace)

    try:
        yield IOCall(put, aput)
    except Exception as exc:
        ctx.record(
            "edit_failed",
            {"source": source, "reason": "archive", "error": f"{type(exc).__name__}: {exc}"},
        )
        return view, None
    ctx.persist(source, messages=plan.update())
    count = ctx.session.cache.count_of
    before = sum(count(m) for m in plan.removed)
    ctx.session.cache.forget([str(m.id) for m in plan.removed])
    after = sum(count(m) for m in plan.made)
    if ctx.usage is not None:
        ctx.adjust_usage("messages", after - before)
    ctx.record(
        "context_edit",
        {**plan.ledger(), "source": source, "tokens_before": before, "tokens_after": after} | extra,
    )
    return view.replace(messages=plan.messages), plan


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
