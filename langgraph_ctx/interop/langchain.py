"""Run langgraph-ctx middleware inside LangChain's ``create_agent``.

::

    agent = create_agent(
        model,
        tools,
        system_prompt="You are a logistics assistant.",
        middleware=[ContextMiddleware([PreflightCheck(), TieredCompression()], budget=budget)],
        checkpointer=InMemorySaver(),
    )

The chain runs once per model call, in ``wrap_model_call``: the view is the agent
state with the request's messages; its ``call_next`` calls the model with the view's
messages and ``ctx.tools`` (ephemeral: this request only) and returns
``{"messages": [answer]}``, which the layers may post-process (pre-flight
calibrates from it). Persistent updates and ledger events (``context_ledger``,
added to the agent state; also on the custom stream) return as the ``Command``
of an ``ExtendedModelResponse``: applied with the answer in one step, so if the
model call fails neither lands. Persisted messages land before the answer, as
in a :class:`~langgraph_ctx.Pipeline`: the command moves the answer after them.

Put it first in ``middleware=[...]`` (outermost): it then sees the messages as
checkpointed, and other middleware's request edits apply on top of its own.
Node filters (``nodes=``, ``default_nodes``) are ignored: every layer runs on
every model call. A ``wrap_model_call`` middleware inside this one whose
``Command`` adds messages loses them on a call that compresses.

Provider placement (``placement=``, default ``"system"``): what the layers add
(summaries, the recall block) reaches the model in a form every provider
accepts. Summaries are merged into the request's system message (so LangChain's
``AnthropicPromptCachingMiddleware``, inside this one, puts its breakpoint after
them), per-call blocks go into the last user message. With recall among the
layers, the recall block follows ``recall_refresh`` (default ``"delta"``, as
:func:`~langgraph_ctx.agent.create_context_agent` has it: each turn keeps the
lines it added in its user message, so the earlier turns stay a cached prefix):
a :class:`~langgraph_ctx.middleware.ProviderPlacement` layer is added for it. A
``ProviderPlacement`` among the layers decides instead.

What the layers need is checked when it is built, against its ``state_schema``
(:class:`ContextAgentState`): a layer that needs another key (``ToolEviction``
writes ``tool_cache``) is refused until a subclass gives a ``state_schema``
extending ``ContextAgentState`` with it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Annotated, Any, cast, get_type_hints

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command
from typing_extensions import NotRequired

from langgraph_ctx._checks import check_bool
from langgraph_ctx.budget import Budget
from langgraph_ctx.errors import ConfigurationError, ContextRunError
from langgraph_ctx.history.breakpoints import is_anthropic, mark_breakpoints
from langgraph_ctx.middleware.glimpse import Glimpse
from langgraph_ctx.middleware.placement import (
    ANNOTATION,
    REFRESHES,
    Placement,
    ProviderPlacement,
    RecallRefresh,
    check_placement,
    drops_text_beside_calls,
    place_messages,
    text_off_calls,
)
from langgraph_ctx.middleware.recall import MemoryRecall
from langgraph_ctx.pipeline import CallContext, EventSink, Middleware, View
from langgraph_ctx.pipeline.chain import arun_layers, run_layers
from langgraph_ctx.pipeline.wiring import Pipeline, middleware_list
from langgraph_ctx.state import LedgerEntry, ledger_reducer, with_keys
from langgraph_ctx.strategies.pace.glimpse import StepSource
from langgraph_ctx.strategies.pace.middleware import PredictiveExtraction
from langgraph_ctx.tokens import TokenCounter

NODE = "model"  # create_agent's model node: the ``node`` of our ledger entries


class ContextAgentState(AgentState[Any]):
    """The agent state, plus the bounded ledger of what the context manager did."""

    context_ledger: NotRequired[Annotated[list[LedgerEntry], ledger_reducer()]]


class ContextMiddleware(AgentMiddleware[ContextAgentState, Any, Any]):
    """Our middleware chain as one LangChain agent middleware."""

    state_schema = ContextAgentState

    def __init__(
        self,
        middleware: Iterable[Middleware | Callable[..., Any]],
        *,
        budget: Budget | None = None,
        counter: TokenCounter | None = None,
        system_prompt_counted: bool = True,
        events: EventSink | None = None,
        max_sessions: int = 1024,
        placement: Placement = "system",
        recall: bool = False,
        recall_refresh: RecallRefresh = "delta",
    ) -> None:
        """
        Args:
            middleware: our middleware, ordered by priority, then list order.
            budget: the window and its allocations. Default: the 128K table.
            counter: how tokens are counted. Default: cl100k.
            system_prompt_counted: count the request's system prompt as ``system``.
            events: where every ledger event is also written, if anywhere.
            max_sessions: threads whose token caches are kept in memory.
            placement: where summaries go in the request (``"system"``: merged
                into its system message; ``"pair"``: a user/assistant pair each;
                ``"none"``: as the history has them). See
                :mod:`~langgraph_ctx.middleware.placement`.
            recall: bring back, before each model call, what the strategy among
                ``middleware`` archived and the question needs
                (:class:`~langgraph_ctx.middleware.MemoryRecall`), and give the
                agent the ``glimpse`` tool (this middleware's ``tools``; its
                answers capped at ``Glimpse.max_tokens``, as the agent state
                keeps no ``session`` for a budget-sized cap). With a
                :class:`~langgraph_ctx.strategies.PredictiveExtraction` layer the
                tool is there anyway and also reads PACE's steps by id.
            recall_refresh: where the recall block goes from call to call
                (``"delta"``, ``"call"`` or ``"compression"``; see
                :class:`~langgraph_ctx.middleware.ProviderPlacement`), for
                recall on or a ``MemoryRecall`` among ``middleware``; ignored
                when ``middleware`` has its own ``ProviderPlacement``.
        """
        middleware = middleware_list("ContextMiddleware.middleware", middleware)
        check_bool("ContextMiddleware.recall", recall)
        # PACE's steps are glimpsable whether or not recall is on: it shows them
        # condensed but never archives them.
        pace = any(isinstance(m, PredictiveExtraction) for m in middleware)
        sources = [StepSource()] if pace else []
        archive = None
        if recall:
            archive = _archive_of(middleware)
            middleware = [*middleware, MemoryRecall(archive=archive)]
        glimpse = [Glimpse(archive, sources=sources).tool] if archive is not None or sources else []
        self.placement = check_placement(placement, "ContextMiddleware.placement")
        if recall_refresh not in REFRESHES:
            raise ConfigurationError(
                "ContextMiddleware.recall_refresh",
                f"must be one of {list(REFRESHES)}, got {recall_refresh!r}",
            )
        if any(isinstance(m, MemoryRecall) for m in middleware) and not any(
            isinstance(m, ProviderPlacement) for m in middleware
        ):
            # Placed in the chain (innermost), not only when the request is shaped:
            # the blocks kept per turn live in the session, and their tokens in
            # the usage report the ceiling trusts.
            middleware.append(ProviderPlacement(self.placement, recall_refresh=recall_refresh))
        # A strategy's own state keys (its ``state_schema``, e.g. PACE's ``pace_chunks``)
        # join this middleware's: create_agent builds the agent's state from it.
        keys = [s for m in middleware if isinstance(s := getattr(m, "state_schema", None), type)]
        if keys:
            self.state_schema = with_keys(type(self).state_schema, *keys)
        # The pipeline registers the layers, checks them against this agent's state
        # and keeps the per-thread token caches; it is attached to the model calls.
        self.pipeline = Pipeline(
            middleware, budget=budget, counter=counter, events=events, max_sessions=max_sessions
        )
        self.layers = self.pipeline.attach_to_calls(
            NODE,
            _keys(self.state_schema),
            f"give {type(self).__name__} a state_schema extending ContextAgentState with",
        )
        self.system_prompt_counted = system_prompt_counted
        # And the tools a layer needs the agent to have (BACM's fold): create_agent binds them.
        own = [t for layer in self.layers for t in getattr(layer.middleware, "tools", ())]
        self.tools = [*glimpse, *own]

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        ctx, view = self._context(request)
        result = run_layers(
            self.layers,
            ctx,
            view,
            lambda v: _as_update(handler(_shape(request, v, ctx, self.placement))),
        )
        return _extended(_as_response(result), ctx)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        ctx, view = self._context(request)

        async def terminal(v: View) -> dict[str, Any]:
            return _as_update(await handler(_shape(request, v, ctx, self.placement)))

        result = await arun_layers(self.layers, ctx, view, terminal)
        return _extended(_as_response(result), ctx)

    def _context(self, request: ModelRequest[Any]) -> tuple[CallContext, View]:
        state = cast(dict[str, Any], request.state)
        ctx = self.pipeline.context_for(
            NODE,
            state,
            _config(request),
            request.runtime.stream_writer if request.runtime else None,
            tools=request.tools,
            # Per request, not per agent: another middleware may change the prompt.
            system_prompt=request.system_prompt if self.system_prompt_counted else None,
        )
        return ctx, View({**state, "messages": list(request.messages)})


def _archive_of(middleware: list[Middleware | Callable[..., Any]]) -> Any:
    archive = next((a for m in middleware if (a := getattr(m, "archive", None)) is not None), None)
    if archive is None:
        raise ConfigurationError(
            "ContextMiddleware.recall",
            "needs a layer that archives (TieredCompression, AdaptiveContextManager)",
        )
    return archive


def _keys(schema: type[Any]) -> frozenset[str]:
    # A TypedDict knows its keys, inherited ones included, without evaluating
    # its annotations (which may name what only its own module can resolve).
    keys: frozenset[str] = getattr(schema, "__required_keys__", frozenset())
    keys |= getattr(schema, "__optional_keys__", frozenset())
    return keys or frozenset(get_type_hints(schema))


def _config(request: ModelRequest[Any]) -> RunnableConfig:
    try:
        return get_config()
    except RuntimeError:  # Python 3.10 under asyncio: no config context; use the runtime's
        info = getattr(request.runtime, "execution_info", None)
        if info is None:
            return {}
        conf = {"thread_id": info.thread_id, "checkpoint_ns": info.checkpoint_ns}
        return {"configurable": {k: v for k, v in conf.items() if v is not None}}


def _shape(
    request: ModelRequest[Any], view: View, ctx: CallContext, placement: Placement
) -> ModelRequest[Any]:
    messages = list(view["messages"])
    mode = ctx.annotations.get(ANNOTATION, placement)
    if mode == "none":
        return request.override(messages=messages, tools=list(ctx.tools))
    # The request's system message goes first, as create_agent sends it; what the
    # placement leads with is the request's system message again.
    system = [request.system_message] if request.system_message is not None else []
    placed = place_messages([*system, *messages], mode)
    if drops_text_beside_calls(request.model):
        # Mistral's client empties an assistant message that calls tools (BACM's step
        # tags on it would never reach the model): its text goes to its first result.
        placed = text_off_calls(placed)
    if is_anthropic(request.model):
        # The end of ARC's memory, or else of the message before the per-call context:
        # what AnthropicPromptCachingMiddleware (the tools, the system message, the
        # tail: three, kept free) does not mark.
        placed = mark_breakpoints(placed, system=False, reserved=3)
    head = placed[0] if placed and isinstance(placed[0], SystemMessage) else None
    rest = cast(list[AnyMessage], placed[1:] if head is not None else placed)
    return request.override(system_message=head, messages=rest, tools=list(ctx.tools))


def _as_update(response: ModelResponse[Any]) -> dict[str, Any]:
    # Our middleware post-process a node's update, not LangChain's response type.
    update: dict[str, Any] = {"messages": list(response.result)}
    if response.structured_response is not None:
        update["structured_response"] = response.structured_response
    return update


def _as_response(result: Any) -> ModelResponse[Any]:
    if isinstance(result, ModelResponse):
        return result
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result])
    if isinstance(result, dict) and isinstance(result.get("messages"), list):
        return ModelResponse(
            result=result["messages"], structured_response=result.get("structured_response")
        )
    raise ContextRunError(
        f"the middleware chain returned {type(result).__name__}; inside create_agent it must "
        "return the update call_next() returned, an AIMessage or a ModelResponse"
    )


def _extended(response: ModelResponse[Any], ctx: CallContext) -> ExtendedModelResponse[Any]:
    writes: list[tuple[str, Any]] = [kv for p in ctx.persistent for kv in p.values.items()]
    if any(k == "messages" for k, _ in writes):
        # LangChain applies the answer first; move it after ours, as a Pipeline orders them.
        answer = list(response.result)
        for m in answer:
            m.id = m.id or str(uuid.uuid4())  # the answer's own write keeps this id
        if not any(k == "messages" and _removes_all(v) for k, v in writes):
            writes.append(("messages", [RemoveMessage(id=str(m.id)) for m in answer]))
        writes.append(("messages", answer))
    if ctx.events:
        writes.append(("context_ledger", list(ctx.events)))
    return ExtendedModelResponse(response, Command(update=writes) if writes else None)


def _removes_all(messages: Sequence[Any] | Any) -> bool:
    return isinstance(messages, Sequence) and any(
        isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES for m in messages
    )
