"""The events of the core: pre-flight, compression, recall, memory, the edit core, tools."""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict  # pydantic needs these before 3.12

from langgraph_ctx.ledger.parts import Collision, EditNote, EditRecord, Fitted, IOFailed, Usage

CompressionPath = Literal["synchronous", "prepared", "ceiling"]
"""How a compression's summary was made (``Compression.path``): on the call that needed
it, ahead of it in the background, or again by the hard ceiling (one meta-summary of
everything before the current turn)."""

PreparedOutcome = Literal[
    "ready",
    "short",
    "waited",
    "none",
    "failed",
    "not_ready",
    "overtaken",
    "compaction",
    "span_mismatch",
    "needs_consolidation",
]
"""What became of the summary prepared ahead (``Compression.prepared``). Applied:
``ready``; ``short``, a turn or so short of the span the call planned, applied as
it frees enough; ``waited``, under way and waited for. Not applied: ``none``, none
was prepared; ``failed``, it raised; ``not_ready``, under way and not waitable;
``overtaken``, a message it covers changed; ``compaction``, the call must also
compact kept tool results; ``span_mismatch``, it would reach into the protected
turns or free too little; ``needs_consolidation``, the call must consolidate the
earlier summaries and it does not."""


class UtilizationMeasured(Usage):
    """``utilization`` as pre-flight records it, before the call."""

    messages_count: int
    """Messages in the view pre-flight measured."""
    calibration_samples: int
    """Provider counts the calibration has learned from."""
    sent_utilization: float
    """Utilization of what was finally sent (lower when compression ran)."""


class Utilization(UtilizationMeasured):
    """``utilization``: pre-flight's measure of a model call, completed after it
    with what the provider reported (when it did)."""

    actual_input: NotRequired[int]
    """Input tokens the provider reported."""
    output_tokens: NotRequired[int]
    """Output tokens the provider reported."""
    calibration_next: NotRequired[float]
    """The calibration the next call starts from."""
    calibration_samples_next: NotRequired[int]
    """Provider counts learned from, after this call."""


class CeilingEnforced(Fitted):
    """``ceiling_enforced``: a prompt (or the history) was fitted under the limit."""

    scope: Literal["prompt", "history"]
    """``prompt``: this call's prompt only; ``history``: the history was rewritten."""
    by: NotRequired[str]
    """The middleware that fitted it, when not pre-flight or compression."""
    total_after: NotRequired[int]
    """The prompt's tokens after the fit."""
    prompt_limit: NotRequired[int]
    """The budget's prompt limit."""


class CeilingChecked(Fitted):
    """``ceiling_enforced`` as pre-flight and compression record it."""

    scope: Literal["prompt", "history"]
    total_after: int
    prompt_limit: int


class CeilingFitBy(Fitted):
    """``ceiling_enforced`` as a strategy's own fit records it."""

    scope: Literal["prompt", "history"]
    by: str


class ToolPairsRepaired(TypedDict):
    """``tool_pairs_repaired``: tool calls and results put back in provider order."""

    moved: list[str]
    """Results moved right after their call."""
    orphans: list[str]
    """Results without a call, turned into assistant notes."""
    placeholders: list[str]
    """Calls without a result, given an error-status placeholder."""


class Eviction(TypedDict):
    """``eviction``: tools taken out of the bound tool set."""

    evicted: list[str]
    """Names of the tools taken out."""
    tokens_freed: int
    """Raw tokens of their schemas."""
    reason: Literal["capacity", "budget"]
    """``capacity``: more tools than allowed; ``budget``: over the tools share."""
    cache: list[str]
    """The tools kept, least recently used first."""


class CompressionCandidates(TypedDict):
    """``compression_candidates``: what compression would take at the red line."""

    messages: int
    """Messages it would compress."""
    tokens: int
    """Their raw tokens."""
    through: str | None
    """Id of the last message it would compress."""


class ToolResultsCompacted(TypedDict):
    """``tool_results_compacted``: tool results replaced by digests."""

    ids: list[str]
    """Ids of the results (a digest keeps its id)."""
    tokens_before: int
    """Raw tokens of the results."""
    tokens_after: int
    """Raw tokens of the digests."""


class SummarizerFallback(TypedDict):
    """``summarizer_fallback``: the summarizer failed and the extractive one wrote."""

    reason: str
    """Why the summarizer could not be used (its error, a timeout)."""


class Compression(TypedDict):
    """``compression``: older messages replaced by a summary (originals archived)."""

    seq: int
    """The summary's number in the thread."""
    messages: int
    """Messages it replaced."""
    through: str
    """Id of the last message it covers."""
    tokens_before: int
    """Raw tokens of what it summarized."""
    tokens_after: int
    """Raw tokens of the summary."""
    max_tokens: int
    """What the summarizer was asked for."""
    ratio: float
    """``tokens_before / tokens_after``, 2 decimals."""
    entity_retention: float
    """Share of the originals' entities the summary kept."""
    meta: bool
    """Whether it consolidated earlier summaries too."""
    utilization_after: float
    """Utilization of the prompt once compressed."""
    path: CompressionPath
    """How it was made: on the call, prepared ahead, or by the ceiling."""
    prepared: PreparedOutcome
    """Whether a summary prepared ahead was used, and if not why not."""


class BudgetUnreachable(TypedDict):
    """``budget_unreachable``: pinned content alone is over the limit."""

    total: int
    """The prompt's tokens."""
    prompt_limit: int
    """The budget's prompt limit."""
    pinned_tokens: int
    """Raw tokens of the pinned messages, which are kept."""
    reason: str
    """Why compression could not reach the limit."""


class RecallSkipped(TypedDict):
    """``recall_skipped``: recall did not run on this call."""

    reason: str
    """``no auxiliary budget`` or ``no scope in config``."""
    budget: int
    """Tokens recall had (0 when that was the reason)."""


class RecallScope(TypedDict):
    """``recall_scope``: memory recall lacks its scope keys (recorded once)."""

    missing: list[str]
    """The ``config["configurable"]`` keys it needs."""
    recall: str
    """What recall does without them."""


class Recall(TypedDict):
    """``recall``: memories and archived messages put back into the prompt."""

    latency_ms: float
    """All of recall: store, ranking, selection."""
    store_ms: float
    """Of it, the store and archive searches."""
    mode: Literal["semantic", "lexical"]
    """How memories were matched: embeddings, or words."""
    candidates: int
    """Memories and archived messages found."""
    items: int
    """Items chosen."""
    archived: int
    """Of them, archived messages."""
    warm: bool
    """Whether a session summary led the block."""
    budget: int
    """Tokens the block could take."""
    tokens: int
    """What the block costs (0 when nothing was recalled)."""
    levels: NotRequired[list[str]]
    """The level of each memory recalled (``observation``, ``pattern``, ...)."""
    keys: NotRequired[list[str]]
    """Keys of the memories recalled."""
    ids: NotRequired[list[str]]
    """Ids of the archived messages recalled."""


class RecallTimeout(IOFailed):
    """``recall_timeout``."""


class RecallError(IOFailed):
    """``recall_error``."""


class ObserveTimeout(IOFailed):
    """``observe_timeout``: writing summaries to memory timed out."""


class ObserveError(IOFailed):
    """``observe_error``."""


class RecallOverLimit(TypedDict):
    """``recall_over_limit``: recall's kept blocks exceed their share; compression makes room."""

    tokens: int
    """Recall's blocks kept in the prompt, raw tokens."""
    limit: int
    """What they may take, calibrated."""


class Observe(TypedDict):
    """``observe``: new summaries written to memory."""

    keys: list[str]
    """Keys of the memories written."""
    latency_ms: float
    """How long the writes took."""


class ObserveSkipped(TypedDict):
    """``observe_skipped``: summaries not written to memory."""

    reason: str
    """Why (no scope in the config)."""
    summaries: int
    """New summaries left unwritten."""


class ArchiveError(TypedDict):
    """``archive_error``: messages left out could not be archived (kept in the checkpoint)."""

    by: str
    """The middleware that left the messages out."""
    error: str
    """The exception, ``repr``."""


class EditRejected(EditNote):
    """``edit_rejected``: the edit core refused an edit; nothing changed."""

    source: str
    """The middleware whose edit it was."""
    reason: str
    """Which rule it broke (:data:`~langgraph_ctx.edits.core.Reason`)."""
    op: int | None
    """The index of the offending operation, if one."""
    detail: str
    """What exactly, in words."""


class EditFailed(TypedDict):
    """``edit_failed``: archiving the originals failed; nothing changed."""

    source: str
    """The middleware whose edit it was."""
    reason: str
    """``archive``: the originals could not be archived."""
    error: str
    """The exception, as ``Type: message``."""


class ArchiveIdCollision(Collision):
    """``archive_id_collision``: an original archived under another key."""

    source: str
    """The middleware whose edit it was."""


class ContextEdit(EditRecord, EditNote):
    """``context_edit``: an applied edit."""

    source: str
    """The middleware that made it."""
    tokens_before: int
    """Raw tokens of the messages it removed."""
    tokens_after: int
    """Raw tokens of the messages it wrote."""


CeilingRecorded = CeilingChecked | CeilingFitBy
"""What a recorder passes for ``ceiling_enforced`` (read it as :class:`CeilingEnforced`)."""
