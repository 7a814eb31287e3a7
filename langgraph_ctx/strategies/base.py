"""What every context strategy shares: compression's slot in the chain, for
those that rewrite the history the archive and the edit core, and for the
offline baselines (AdaCoM's policy, BACM's folding rule, ARC's manager) their
token counter, extractive summarizer and entity cache (:class:`OfflineBaseline`).

Public inside the package: each ``strategies/<name>/`` folder builds on these."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from typing_extensions import Self

from langgraph_ctx._checks import check_bool, check_has, check_instance
from langgraph_ctx.compression import ExtractiveSummarizer, Summarizer, entities
from langgraph_ctx.edits.apply import apply_edits, check_rewritable
from langgraph_ctx.edits.core import EditOp, EditPlan, Protection
from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.ledger.parts import EditNote
from langgraph_ctx.middleware.preflight import PreflightCheck
from langgraph_ctx.pipeline import CallContext, Hook, Middleware, View
from langgraph_ctx.storage.archive import InMemoryArchive, MessageArchive
from langgraph_ctx.tokens import TokenCounter


class ContextStrategy(Middleware):
    """The one middleware that decides what of the history the model sees:
    tiered compression, AdaCoM, ARC, BACM or PACE (``strategy=`` picks one).

    They all sit in compression's slot: after pre-flight (their trigger, and the
    room its report leaves) and tool eviction, before recall, whose ephemeral
    block must never reach a persisted rewrite, and before placement. A subclass
    narrows what differs (its nodes, what it writes).
    """

    priority = 30
    default_nodes: tuple[str, ...] | None = ("call_llm", "think")
    requires: tuple[type[Middleware] | str, ...] = (PreflightCheck,)
    reads: tuple[str, ...] = ("messages",)
    writes: tuple[str, ...] = ("messages", "context_ledger")
    state_schema: type[Any] | None = None
    """The state keys this strategy keeps besides the core state (a TypedDict; its
    keys are among :attr:`writes`), as LangChain v1's ``AgentMiddleware.state_schema``:
    :func:`~langgraph_ctx.agent.create_context_agent` and
    :class:`~langgraph_ctx.interop.langchain.ContextMiddleware` merge it into the
    graph's state (:func:`~langgraph_ctx.state.with_keys`). ``None``: none."""
    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {"default": {}}
    """Named sets of constructor arguments (:meth:`from_preset`): ``"default"`` is
    the constructor's own defaults; a strategy after a paper adds ``"paper"``, the
    mechanism as its authors ran it where our defaults differ (each strategy's
    settings docs list the differences)."""

    @classmethod
    def from_preset(cls, preset: str = "default", **kwargs: Any) -> Self:
        """The strategy with ``preset``'s arguments; ``kwargs`` given here win over
        them (``AdaptiveContextManager.from_preset("paper", timeout=60.0)``)."""
        values = check_preset(cls.name, preset, cls.presets)
        return cls(**{**values, **kwargs})


@dataclass(frozen=True, kw_only=True)
class BuildInputs:
    """What the registry (:mod:`~langgraph_ctx.strategies.registry`) builds each
    strategy's middleware from: one agent's settings, the same for every strategy.
    Each folder's ``build(given)`` takes it, and decides which of it to use."""

    archive: MessageArchive | None
    """Where what the strategy removes goes (``None``: its own, in memory)."""
    summary_model: BaseChatModel | None
    """Its summarizer, manager or policy; without one it runs offline."""
    nodes: Sequence[str]
    """The agent's model nodes; a strategy may run on the agent's own call only."""
    recall: bool
    """Recall over the archive is on."""
    preset: str = "default"
    """Its preset by name (``"paper"`` for adacom, arc, bacm and pace), checked by
    the registry for a strategy that has only ``"default"``."""


def check_preset(
    strategy: str, preset: Any, presets: Mapping[str, Mapping[str, Any]]
) -> Mapping[str, Any]:
    """``presets[preset]``, or a :class:`~langgraph_ctx.errors.ConfigurationError`
    naming the presets ``strategy`` has."""
    if isinstance(preset, str) and preset in presets:
        return presets[preset]
    if isinstance(preset, str) and len(presets) == 1:
        raise ConfigurationError(
            "preset",
            f"strategy {strategy!r} has no preset {preset!r}, only 'default' (a paper "
            "preset exists for adacom, arc, bacm and pace)",
        )
    raise ConfigurationError(
        "preset", f"unknown preset {preset!r} for {strategy!r}; use one of {list(presets)}"
    )


class RewritingStrategy(ContextStrategy):
    """A strategy that rewrites the persisted history: tiered compression, AdaCoM,
    ARC and BACM (PACE only shapes each call's view).

    What it removes goes to :attr:`archive` first, so :meth:`original` gets it
    back; the task is pinned if ``pin_task``; and a graph whose ``messages`` a
    rewrite cannot reach is refused when the pipeline is attached.
    """

    protection: Protection = "manager"
    """What :meth:`edit` may not touch (:data:`~langgraph_ctx.edits.core.Protection`): a
    manager's rules; compression plans by its own tiers (``"tiers"``)."""

    def __init__(
        self, *, archive: MessageArchive | None = None, pin_task: bool = True, **kwargs: Any
    ) -> None:
        """
        Args:
            archive: where the originals of what is rewritten go. Default: in-process.
            pin_task: the session's first user message is pinned (kept verbatim).
            **kwargs: :class:`~langgraph_ctx.pipeline.Middleware`'s.
        """
        super().__init__(**kwargs)
        if archive is not None:
            check_has("archive", archive, ("put", "aput", "get"), "a MessageArchive")
        self.archive: MessageArchive = archive if archive is not None else InMemoryArchive()
        self.pin_task = check_bool("pin_task", pin_task)

    def check_graph(self, builder: Any, nodes: frozenset[str] | None) -> None:
        check_rewritable(builder, type(self).__name__)

    def original(
        self, thread_id: str, message_id: str, *, namespace: str = ""
    ) -> BaseMessage | None:
        """Any message this strategy removed from a thread's active state."""
        return self.archive.get(thread_id, message_id, namespace=namespace)

    def edit(
        self,
        view: View,
        ctx: CallContext,
        ops: Sequence[EditOp],
        data: EditNote | None = None,
        *,
        reason: str | Callable[[BaseMessage], str] = "edited",
    ) -> Hook[tuple[View, EditPlan | None]]:
        """:func:`~langgraph_ctx.edits.apply.apply_edits` with this strategy's archive,
        name and pinning; ``data`` joins the ledger entry, ``reason`` is the
        archive's for the originals."""
        return (
            yield from apply_edits(
                view,
                ctx,
                ops,
                archive=self.archive,
                source=self.name,
                pin_task=self.pin_task,
                rules=self.protection,
                reason=reason,
                data=data,
            )
        )


_CACHED = 20_000
"""Entity sets kept before the cache starts again (a few MB at most)."""


@dataclass(kw_only=True, eq=False)
class OfflineBaseline:
    """A deterministic stand-in for a learned manager: rules, no model.

    Each baseline is its settings and the rules that read them: a keyword-only
    dataclass with a docstring per field, each setting checked in
    ``__post_init__`` with a :class:`~langgraph_ctx.errors.ConfigurationError`
    naming it (as :class:`~langgraph_ctx.strategies.PaceSettings`). This base
    holds what all three need besides: the token counter their digests are sized
    with, the extractive summarizer on it, and the entities of each message, cached.
    """

    counter: TokenCounter = field(default_factory=TokenCounter)
    """Counts tokens: digests are sized with it. Default: tiktoken's ``cl100k_base``."""

    def __post_init__(self) -> None:
        label = f"{type(self).__name__}.counter"
        check_instance(label, self.counter, TokenCounter, "a TokenCounter")
        self.summarizer: Summarizer = ExtractiveSummarizer(self.counter)
        self._entities: dict[tuple[str, int], set[str]] = {}

    def entities_of(self, key: str, text: str) -> set[str]:
        """The entities of ``text`` (:func:`~langgraph_ctx.compression.entities`).

        Cached: every decision would otherwise re-read the whole history. Keyed by
        the text's hash as well as ``key`` (a message id, say), as one baseline may
        serve threads that reuse ids.
        """
        cache_key = (key, hash(text))
        found = self._entities.get(cache_key)
        if found is None:
            if len(self._entities) > _CACHED:
                self._entities.clear()
            found = self._entities[cache_key] = entities(text)
        return found
