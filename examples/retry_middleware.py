"""Retry a failing model call from a middleware, then fall back: no trace of failed attempts.

A middleware may call ``call_next`` again after it raised. Each failed attempt
is rolled back first: what the layers inside it persisted or recorded (here,
pre-flight's utilization entry) is dropped, so the checkpoint holds one answer
and one measurement per turn however many attempts it took. What the retry
layer records itself, outside the failed call, stays.

LangGraph's ``RetryPolicy`` re-runs the whole node; this re-runs only what is
inside the middleware, and can answer with a fallback when the provider stays down.

Run it: ``python examples/retry_middleware.py``. It uses the scripted model,
so it needs no network or API key.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_ctx import (
    CallContext,
    ContextState,
    Middleware,
    Pipeline,
    PreflightCheck,
    View,
    call_llm_node,
)
from langgraph_ctx.pipeline import CallNext
from langgraph_ctx.testing import ScriptedChatModel

FALLBACK = "The assistant is unavailable right now; please try again in a minute."


class RetryModelCall(Middleware):
    """Calls the rest of the chain again when the provider fails; then falls back."""

    name = "retry"
    priority = 5  # outermost: pre-flight measures each attempt afresh
    writes = ("context_ledger",)  # it records its retries

    def __init__(self, *, attempts: int = 3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.attempts = attempts

    def __call__(self, view: View, ctx: CallContext, call_next: CallNext) -> Any:
        for attempt in range(1, self.attempts + 1):
            try:
                return call_next(view)
            except ConnectionError as exc:
                # Recorded by this layer, outside the failed call: it is kept.
                ctx.record("retry", {"attempt": attempt, "error": str(exc)})
        return {"messages": [AIMessage(FALLBACK)]}  # short-circuit: the node is not run


calls = itertools.count(1)
OUTAGES = {1, 2, 4, 5, 6}  # the provider fails these calls (the 1st turn twice, then for good)


def provider(messages: Sequence[BaseMessage]) -> str:
    n = next(calls)
    if n in OUTAGES:
        raise ConnectionError(f"503 Service Unavailable (call {n})")
    return "Shipment SHP-0042 cleared customs at 09:40; the carrier is Maersk."


model = ScriptedChatModel(default=provider)
builder = StateGraph(ContextState)
builder.add_node("call_llm", call_llm_node(model))
builder.add_edge(START, "call_llm")
pipeline = Pipeline([RetryModelCall(nodes=["call_llm"]), PreflightCheck()])
graph = pipeline.attach(builder).compile(checkpointer=InMemorySaver())


def main() -> dict[str, Any]:
    config: Any = {"configurable": {"thread_id": "retry-example"}}
    for question in ("Where is shipment SHP-0042?", "And SHP-0043?"):
        graph.invoke({"messages": [HumanMessage(question)]}, config)
    values = graph.get_state(config).values
    answers = [m.text for m in values["messages"] if m.type == "ai"]
    kinds = [e["kind"] for e in values["context_ledger"]]
    for answer in answers:
        print("answer:", answer)
    print("ledger:", ", ".join(kinds))
    return {"answers": answers, "kinds": kinds}


if __name__ == "__main__":
    main()
