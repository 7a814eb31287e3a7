"""Answers kept with the defaults, question asked: every strategy, recall on and off,
at 2K to 128K windows, on BFCL memory, tau-bench and multi-session conversations.

Run from the repo root::

    python benchmarks/answers_kept.py [--quick] [--windows 2000 4000 ...]
        [--strategies tiered pace ...] [--workloads conversations bfcl tau] [--peers ...]
        [--seed N] [--sessions N] [--workers N]

What a user gets: ``create_context_agent(model, tools, budget=Budget.for_window(W),
strategy=..., recall=...)`` and every other option at its default (``think`` on), a
SQLite file checkpointer (``checkpointer="sqlite:///..."``), one ``invoke`` per user
turn. The model is :class:`~langgraph_ctx.testing.ScriptedChatModel` playing the
recorded assistant: each ``call_llm`` call gets the turn's next recorded reply (tool
calls included), each ``think`` call a confident thought that names the tools the
turn's replies call (so ``fetch_tools`` binds them, as a real thought would). Tools
return the recorded results.

A question is asked as the next user turn, and an answer counts as *kept* when it is
in the prompt ``call_llm`` receives on that turn (the first ``call_llm`` call: with
``think`` on, a ``think`` call comes before it and is not the one that answers):

- **conversations**: :mod:`harness.conversations`, generated from a seed (several
  dated sessions; facts stated once, asked sessions later in other words; single,
  temporal and multi-hop questions). Every part the answer needs (the value, and for
  a date or a second hop a word only the stating message has), as a whole word.
- **BFCL v4 memory**: each scenario's conversations, then each of its questions as
  one more turn, in order (the reply to a question is ``ok``, so no answer leaks
  into the history); an accepted answer, anywhere in the text.
- **tau-bench airline**: each trajectory's user turns (the agent makes the recorded
  tool calls, tools give the recorded results), then a question that names the gold
  actions and their argument names, never the values; every gold argument value,
  as a whole word, counted one by one; the policy is the system prompt and is left
  out of the search.

A cell that raises shows the error's class (and the turn) instead of a number; the
run goes on. The peers (LangChain's ``SummarizationMiddleware`` on ``create_agent``,
langmem's ``summarize_messages`` in a node) replay the same turns without ``think``
and without recall, their summaries written by the package's offline extractive
summarizer behind the chat-model interface, settings derived from the window as
``harness.peers`` derives them.

At 32K and 128K every model call is measured on the real ``ChatOpenAI`` and
``ChatAnthropic`` payloads under each provider's caching rules
(``benchmarks/harness/provider_cache.py``), ``think``'s calls and ``call_llm``'s each
as their own sequence (as ``prompt_cache_think`` measures them: the OpenAI meter
compares a call with the one before it only): the share of prompt tokens a cache
would serve, and the cost per kept answer at Claude Sonnet 4.5's prices (reads 0.1x,
writes 1.25x of $3 per million input tokens), as ``prompt_cache`` prices them; ours
pays for ``think``'s calls too, the peers make none.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import emit, header, table
from harness.conversations import generate_conversation
from harness.realdata import SCENARIOS
from harness.session import holds, prompt_text
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from langgraph_ctx import Budget
from langgraph_ctx.agent import Thought, create_context_agent
from langgraph_ctx.strategies.registry import STRATEGIES as REGISTRY
from langgraph_ctx.testing import ScriptedChatModel
from langgraph_ctx.tokens import TokenCounter, load_encoding

STRATEGIES = ("tiered", "none", *(n for n in REGISTRY if n not in ("tiered", "none")))
"""Every strategy of the registry (:data:`langgraph_ctx.strategies.registry.STRATEGIES`, so a
new one is measured without an edit here): the default first, then "none" (nothing
manages the history; pre-flight's ceiling fits each call), the baseline the others
should beat, then the rest in the registry's order."""
WINDOWS = (2_000, 4_000, 8_000, 32_000, 128_000)
CACHE_WINDOWS = (32_000, 128_000)
WORKLOADS = ("conversations", "bfcl", "tau")
HELD_OUT = 1_000
"""The full run's first conversation seed: none that a test or ``--quick`` uses, so
defaults tuned on those are checked on conversations they have not seen."""
BFCL_SCENARIOS = ("finance",)
"""The BFCL scenarios run by default (all five take about 4x as long)."""
BASE_PER_MTOK, CACHE_READ, CACHE_WRITE = 3.00, 0.10, 1.25  # Claude Sonnet 4.5 (prompt_cache.py)


# -- what is replayed ---------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """An answer a question needs: every group, one spelling of each."""

    id: str
    needs: tuple[tuple[str, ...], ...]
    whole_word: bool
    kind: str = ""


@dataclass(frozen=True)
class Turn:
    """One ``invoke``: the user's messages, the replies ``call_llm`` gives in order (the
    last without tool calls), and what the first ``call_llm`` prompt must hold."""

    user: tuple[str, ...]
    replies: tuple[AIMessage, ...]
    probes: tuple[Probe, ...] = ()


@dataclass(frozen=True)
class Dialogue:
    name: str
    turns: tuple[Turn, ...]
    system: str | None = None
    results: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Recorded tool results by ``name + arguments``, in the order they came."""
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    dialogues: tuple[Dialogue, ...]
    note: str


def conversations(quick: bool, seed: int, sessions: int | None = None) -> Workload:
    count, size = (1, 4) if quick else (1, 8)
    size = sessions or size
    dialogues = []
    for k in range(count):
        conv = generate_conversation(size, seed=seed + k)
        turns = []
        for t in conv.turns:
            probes = ()
            if t.question is not None:
                q = t.question
                probes = (Probe(f"{seed + k}/{q.id}", q.needs, True, q.kind),)
            turns.append(Turn((t.user,), (AIMessage(t.reply),), probes))
        dialogues.append(Dialogue(f"conversation {seed + k}", tuple(turns)))
    n, q = _size(dialogues)
    return Workload(
        "conversations",
        "multi-session conversations (generated)",
        tuple(dialogues),
        f"{count} conversation(s) of {size} dated sessions (seeds {seed}-{seed + count - 1}), "
        f"{n} turns, {q} questions",
    )


def _size(dialogues: Sequence[Dialogue]) -> tuple[int, int]:
    """A workload's turns and questions, for its note."""
    turns = [t for d in dialogues for t in d.turns]
    return len(turns), sum(len(t.probes) for t in turns)


def bfcl(quick: bool, data: Path, scenarios: Sequence[str] = BFCL_SCENARIOS) -> Workload:
    from harness.realdata import _jsonl

    base = data / "bfcl-memory"
    answers = {a["id"]: a for a in _jsonl(base / "BFCL_v4_memory_answer.json")}
    questions = _jsonl(base / "BFCL_v4_memory.json")
    dialogues = []
    for scenario in scenarios:
        turns = []
        for conv in _jsonl(base / f"memory_{scenario}.json"):
            for turn in conv["question"]:
                turns.append(Turn(tuple(m["content"] for m in turn), (AIMessage("ok"),)))
        asked = [q for q in questions if q["scenario"] == scenario]
        for q in asked[:8] if quick else asked:
            gold = tuple(answers[q["id"]]["ground_truth"])
            probe = Probe(q["id"], (gold,), False)
            turns.append(Turn((q["question"][-1][-1]["content"],), (AIMessage("ok"),), (probe,)))
        dialogues.append(Dialogue(f"bfcl {scenario}", tuple(turns)))
    n, q = _size(dialogues)
    scope = f"scenario(s) {', '.join(scenarios)}, " + (
        "the first 8 questions of each" if quick else "all their questions"
    )
    return Workload(
        "bfcl", "BFCL v4 memory", tuple(dialogues), f"{scope}; {n} turns, {q} questions"
    )


def tau(quick: bool, data: Path, count: int | None = None) -> Workload:
    from harness.realdata import _call, _scalars

    raw = json.loads((data / "tau-bench" / "gpt-4o-airline.json").read_text("utf-8"))
    chosen = [t for t in raw if t["trial"] == 0 and t["info"]["task"]["actions"]]
    chosen = chosen[: count or (2 if quick else 4)]
    dialogues = []
    for traj in chosen:
        turns: list[Turn] = []
        user: list[str] = []
        replies: list[AIMessage] = []
        results: dict[str, list[str]] = {}
        names: set[str] = set()
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for m in traj["traj"][1:]:
            if m["role"] == "assistant":
                made = [_call(c) for c in m.get("tool_calls") or ()]
                for c in made:
                    calls[c["id"]] = (c["name"], c["args"])
                    names.add(c["name"])
                replies.append(AIMessage(m["content"] or "", tool_calls=made))
            elif m["role"] == "tool":
                name, args = calls[m["tool_call_id"]]
                results.setdefault(_key(name, args), []).append(m["content"])
            else:
                if user or replies:
                    turns.append(Turn(tuple(user), tuple(replies)))
                user, replies = [m["content"]], []
        if user or replies:
            turns.append(Turn(tuple(user), tuple(replies)))
        actions = traj["info"]["task"]["actions"]
        ask = "; ".join(f"{a['name']}({', '.join(a['kwargs'])})" for a in actions)
        values = sorted(set(_scalars([a["kwargs"] for a in actions])))
        name = f"task {traj['task_id']}"
        probes = tuple(Probe(f"{name}: {v}", ((v,),), True) for v in values)
        turns.append(Turn((f"Now do: {ask}.",), (AIMessage("ok"),), probes))
        dialogues.append(
            Dialogue(
                name,
                tuple(turns),
                system=traj["traj"][0]["content"],
                results={k: tuple(v) for k, v in results.items()},
                tools=tuple(sorted(names)),
            )
        )
    n, q = _size(dialogues)
    return Workload(
        "tau",
        "tau-bench airline",
        tuple(dialogues),
        f"the first {len(dialogues)} trajectories with gold actions (trial 0), {n} user turns, "
        f"{q} gold argument values",
    )


def _key(name: str, args: dict[str, Any]) -> str:
    return name + json.dumps(args, sort_keys=True, default=str)


class RecordedTool(BaseTool):
    """A tool that gives the recorded results of its calls, in the order they came."""

    args_schema: Any = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "additionalProperties": True}
    )
    queue: dict[str, deque[str]]
    answered: Counter[str] = Field(default_factory=Counter)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        # The result's id from its call's (LangGraph gives it a random one): the ids
        # reach the prompt (a compacted result names its archived original), so with
        # random ones a run's token counts, and a compression on the line, moved from
        # one run to the next.
        out = super().invoke(input, config, **kwargs)
        call = input.get("id") if isinstance(input, dict) else None
        if isinstance(out, ToolMessage) and call:
            self.answered[call] += 1
            out.id = f"{call}/result {self.answered[call]}"
        return out

    def _run(self, **kwargs: Any) -> str:
        left = self.queue.get(_key(self.name, kwargs))
        return left.popleft() if left else json.dumps({"error": "no recorded result"})


# -- one cell: a strategy, recall on or off, a window, every dialogue of a workload --------


@dataclass
class Cell:
    kept: int = 0
    probes: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    question_tokens: int = 0
    calls: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    error: str | None = None
    cache: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    """OpenAI cached, OpenAI total, Anthropic cached, Anthropic total: every call."""
    cost: float = 0.0
    """Anthropic dollars for every call, reads at 0.1x, the rest written at 1.25x."""
    over_window: int = 0
    """Questions whose prompt (messages and tool schemas) passed the model's window:
    a provider refuses the call, so their answers count as not kept (a peer that
    does not count its tools or system prompt can send them; ours never do)."""
    timeouts: Counter[str] = field(default_factory=Counter)
    """Ledger events of a store or model that ran out of time (``recall_timeout``,
    ``fold_failed``...), by kind: the one thing in a cell the machine's load can
    change (ids are fixed by the dialogue), so a cell that moved says why."""

    @property
    def share(self) -> float:
        return self.kept / self.probes if self.probes else 0.0


THOUGHT_TOOL = convert_to_openai_tool(Thought)


class Player:
    """The scripted model's two roles in one dialogue, and what it measures."""

    def __init__(self, dialogue: Dialogue, cell: Cell, meters: Any, window: int) -> None:
        self.dialogue, self.cell, self.meters = dialogue, cell, meters
        self.window = window
        self.replies: deque[AIMessage] = deque()
        self.turn_tools: list[str] = []
        self.capture: Turn | None = None
        self.counter = TokenCounter()
        policy = dialogue.system.casefold() if dialogue.system else None
        self.policy = policy
        self.at = "setup"
        """Where the dialogue is: what a failure names."""
        self.made = 0
        """Replies given this turn: their ids (see :meth:`act`)."""

    def start(self, turn: Turn) -> None:
        self.replies = deque(turn.replies)
        self.made = 0
        self.turn_tools = list(dict.fromkeys(c["name"] for r in turn.replies for c in r.tool_calls))
        self.capture = turn if turn.probes else None

    def act(self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        self.cell.calls += 1
        self._meter("call_llm", messages, tools)
        if self.capture is not None:
            self._check(messages, tools, self.capture)
            self.capture = None
        reply = self.replies.popleft() if self.replies else AIMessage("ok")
        # An id of its own, fixed by the dialogue: LangChain's run id (time-based) in
        # its place reached the prompt's tokens through BACM's step tags and recall's
        # ids, and a cell moved by an answer or two from one run to the next.
        self.made += 1
        return reply.model_copy(update={"id": f"{self.dialogue.name}/{self.at}/r{self.made}"})

    def think(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        self.cell.calls += 1
        self._meter("think", messages, (THOUGHT_TOOL,))
        asked = next((m.text for m in reversed(messages) if m.type == "human"), "")
        if self.turn_tools:
            action = {"kind": "tool_call", "detail": " ".join(self.turn_tools)}
        else:
            action = {"kind": "respond", "detail": asked[:40]}
        return {
            "hypothesis": f"The user asks: {asked[-60:]}",
            "confidence": 0.9,
            "gaps": [],
            "next_thought_needed": False,
            "actions": [{**action, "expected_utility": 0.8}],
        }

    def _meter(
        self, node: str, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
    ) -> None:
        if self.meters is None:
            return
        values = self.meters[node].measure(messages, tools)
        for i, v in enumerate(values):
            self.cell.cache[i] += v
        _, _, cached, total = values
        uncached = total - cached
        self.cell.cost += (CACHE_WRITE * uncached + CACHE_READ * cached) * BASE_PER_MTOK / 1e6

    def _check(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> None:
        text = prompt_text(messages)
        if self.policy:
            text = text.replace(self.policy, "")
        size = self.counter.count_messages(list(messages))
        self.cell.question_tokens += size
        refused = size + sum(map(self.counter.count_tool, tools)) > self.window
        self.cell.over_window += refused
        for p in turn.probes:
            found = not refused and all(holds(text, group, p.whole_word) for group in p.needs)
            self.cell.kept += found
            self.cell.probes += 1
            self.cell.kinds[p.kind] += 1
            self.cell.by_kind[p.kind] += found


def run_cell(
    workload: Workload,
    strategy: str,
    recall: bool,
    window: int,
    folder: Path,
    cache: bool,
    preset: str = "default",
    *,
    usage: bool = True,
) -> Cell:
    """One cell: every dialogue of ``workload`` through ``strategy`` (``preset``: its
    preset, for a strategy after a paper; ``benchmarks/presets.py`` compares them).
    ``usage=False``: the model reports no token usage, so calibration stays at 1.0 (a
    test comparing two cells' decisions token for token)."""
    cell = Cell()
    meters = None
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        for n, dialogue in enumerate(workload.dialogues):
            if cache:
                from harness.provider_cache import ProviderMeters

                encoding = load_encoding()
                assert encoding is not None
                tokens = functools.lru_cache(maxsize=65_536)(encoding.encode)
                # Each node's calls as their own sequence (as prompt_cache_think measures):
                # the OpenAI meter compares a call with the one before it only.
                meters = {node: ProviderMeters(tokens) for node in ("call_llm", "think")}
            db = folder / f"{n}.sqlite"
            if strategy in PEERS:
                played = play_peer(dialogue, strategy, window, db, cell, meters)
            else:
                played = play(
                    dialogue, strategy, recall, window, db, cell, meters, preset, usage=usage
                )
            cell.timeouts.update(_timed_out(db))
            if played is not None:
                cell.error = played
                break
    finally:
        cell.wall = time.perf_counter() - wall0
        cell.cpu = time.process_time() - cpu0
    return cell


def _timed_out(db: Path) -> Counter[str]:
    """The dialogue's ledger events that say something ran out of time (the event
    table in the checkpointer's file; a peer's file has none)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(db)) as conn:
        try:
            rows = conn.execute("SELECT kind, data_json FROM lgctx_events").fetchall()
        except sqlite3.OperationalError:  # no event table: a peer's checkpoint
            return Counter()
    return Counter(
        kind
        for kind, data in rows
        if kind.endswith("_timeout") or (kind.endswith("_failed") and "imeout" in data)
    )


def play(
    dialogue: Dialogue,
    strategy: str,
    recall: bool,
    window: int,
    db: Path,
    cell: Cell,
    meters: Any,
    preset: str = "default",
    *,
    usage: bool = True,
) -> str | None:
    """Every turn of one dialogue through a fresh agent; the error, if one was raised."""
    player, tools = _player(dialogue, cell, meters, window)
    model = ScriptedChatModel(
        default=player.act, structured_default=player.think, keep_calls=0, report_usage=usage
    )
    try:
        agent = create_context_agent(
            model,
            tools,
            checkpointer=f"sqlite:///{db}",
            budget=Budget.for_window(window),
            strategy=strategy,
            recall=recall,
            system_prompt=dialogue.system,
            preset=preset,
        )
        # Room for the turn's tool rounds (think, fetch_tools, call_llm, tools each).
        _replay(agent, dialogue, player, steps_per_reply=8)
    except Exception as e:  # a cell that fails shows why, and the run goes on
        return _failed(dialogue, f"{strategy} recall={recall} {window}", player, e)
    return None


def _player(
    dialogue: Dialogue, cell: Cell, meters: Any, window: int
) -> tuple[Player, list[BaseTool]]:
    """The scripted model's player for a dialogue, and its tools giving the recorded results."""
    queue = {k: deque(v) for k, v in dialogue.results.items()}
    tools: list[BaseTool] = [
        RecordedTool(name=t, description=f"The airline system's {t} operation.", queue=queue)
        for t in dialogue.tools
    ]
    return Player(dialogue, cell, meters, window), tools


def _replay(agent: Any, dialogue: Dialogue, player: Player, steps_per_reply: int) -> None:
    """One ``invoke`` per turn of the dialogue, on one thread; ``player.at`` names the turn."""
    config: Any = {"configurable": {"thread_id": dialogue.name}}
    for i, turn in enumerate(dialogue.turns):
        player.at = f"turn {i}"
        player.start(turn)
        config["recursion_limit"] = 25 + steps_per_reply * len(turn.replies)
        said = [
            HumanMessage(u, id=f"{dialogue.name}/turn {i}/u{j}") for j, u in enumerate(turn.user)
        ]
        agent.invoke({"messages": said}, config)


def _failed(dialogue: Dialogue, label: str, player: Player, e: Exception) -> str:
    """Says on stderr why a dialogue stopped; what its cell shows instead of a number."""
    detail = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    print(f"  {dialogue.name} {label}: {player.at}: {detail}", file=sys.stderr)
    return f"{type(e).__name__} ({dialogue.name}, {player.at})"


# -- the peers: the same turns through LangChain's agent and langmem -----------------------

PEERS = {
    "summarization": "LangChain `SummarizationMiddleware` on `create_agent`",
    "langmem": "langmem `summarize_messages` before each call",
}
"""Peers, by name: no recall, no ``think``; summaries by the package's offline extractive
summarizer behind the chat-model interface (``harness.summaries.ExtractiveChatModel``),
settings derived from the window as ``harness.peers`` derives them."""


def play_peer(
    dialogue: Dialogue, peer: str, window: int, db: Path, cell: Cell, meters: Any
) -> str | None:
    """One dialogue through a peer: the first model call of a question's turn answers it."""
    from harness.summaries import ExtractiveChatModel
    from langgraph.checkpoint.sqlite import SqliteSaver

    from langgraph_ctx.compression import ExtractiveSummarizer

    player, tools = _player(dialogue, cell, meters, window)
    model = ScriptedChatModel(default=player.act, keep_calls=0)
    counter = TokenCounter()
    limit, summary = Budget.for_window(window).red_line, min(2_000, window // 16)
    summarizer = ExtractiveChatModel(max_tokens=summary, summarizer=ExtractiveSummarizer())
    policy = counter.count_text(dialogue.system) + 3 if dialogue.system else 0
    try:
        with SqliteSaver.from_conn_string(str(db)) as saver:
            if peer == "summarization":
                agent = _summarization_agent(model, tools, dialogue.system, saver, summarizer,
                                             limit - policy,
                                             int(window * 0.55) - summary - policy)  # fmt: skip
            else:
                agent = _langmem_agent(model, tools, dialogue.system, saver, summarizer,
                                       limit, limit - summary - policy, summary)  # fmt: skip
            _replay(agent, dialogue, player, steps_per_reply=4)  # no think, no fetch_tools
    except Exception as e:  # a cell that fails shows why, and the run goes on
        return _failed(dialogue, f"{peer} {window}", player, e)
    return None


def _summarization_agent(
    model: Any, tools: Any, system: str | None, saver: Any, summarizer: Any, trigger: int,
    keep: int
) -> Any:  # fmt: skip
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware

    counter = TokenCounter()
    middleware = SummarizationMiddleware(
        summarizer,
        trigger=("tokens", trigger),
        keep=("tokens", keep),
        token_counter=lambda ms: counter.count_messages(list(ms)),
        summarizer=lambda messages: summarizer.invoke(messages).text,
    )
    return create_agent(
        model, tools, system_prompt=system, middleware=[middleware], checkpointer=saver
    )


def _langmem_agent(
    model: Any, tools: Any, system: str | None, saver: Any, summarizer: Any, limit: int,
    before: int, summary: int
) -> Any:  # fmt: skip
    from langchain_core.messages import SystemMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langmem.short_term import RunningSummary, summarize_messages

    counter = TokenCounter()
    carried: dict[str, RunningSummary | None] = {"summary": None}  # one thread per agent
    bound = model.bind_tools(tools) if tools else model
    head = [SystemMessage(system, id="policy")] if system else []

    def call_llm(state: MessagesState) -> dict[str, Any]:
        result = summarize_messages(
            [*head, *state["messages"]],
            running_summary=carried["summary"],
            model=summarizer,
            max_tokens=limit,
            max_tokens_before_summary=before,
            max_summary_tokens=summary,
            token_counter=lambda ms: counter.count_messages(list(ms)),
        )
        carried["summary"] = result.running_summary
        return {"messages": [bound.invoke(result.messages)]}

    builder = StateGraph(MessagesState)
    builder.add_node("call_llm", call_llm)
    builder.add_edge(START, "call_llm")
    if tools:
        builder.add_node("tools", ToolNode(tools))
        builder.add_conditional_edges("call_llm", tools_condition)
        builder.add_edge("tools", "call_llm")
    return builder.compile(checkpointer=saver)


# -- the run ------------------------------------------------------------------------------


class _Warnings(logging.Handler):
    """Counts the package's warnings in a cell (each unreachable budget logs one)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _task(args: tuple[Workload, str, bool, int, bool]) -> tuple[Cell, int]:
    workload, strategy, recall, window, cache = args
    counter = _Warnings()
    log = logging.getLogger("langgraph_ctx")
    log.addHandler(counter)
    propagate, log.propagate = log.propagate, False  # counted, not printed
    try:
        with tempfile.TemporaryDirectory() as folder:
            cell = run_cell(workload, strategy, recall, window, Path(folder), cache)
    finally:  # as it was: the test suite calls this in-process, and its caplog listens
        log.removeHandler(counter)
        log.propagate = propagate
    print(
        f"{workload.name} {window:,} {strategy} recall={'on' if recall else 'off'}: "
        f"{cell.kept}/{cell.probes} {cell.error or ''} ({cell.wall:.0f} s, {cell.cpu:.0f} s CPU"
        f"{_said(cell.timeouts)})",
        file=sys.stderr,
        flush=True,
    )
    return cell, counter.count


def pct(cell: Cell) -> str:
    return cell.error.split(" (")[0] if cell.error else f"{100 * cell.share:.1f}%"


def kept_table(cells: dict[tuple[str, bool, int], Cell], strategies: Sequence[str],
               windows: Sequence[int], peers: Sequence[str] = ()) -> list[str]:  # fmt: skip
    """Strategies by window, each cell recall off -> on; a drop is marked."""
    rows = []
    for s in strategies:
        row = [s + {"tiered": " (default)", "none": " (baseline)"}.get(s, "")]
        for w in windows:
            off, on = cells[(s, False, w)], cells[(s, True, w)]
            mark = ""
            if not (off.error or on.error) and on.kept < off.kept:
                mark = " **(on < off)**"
            row.append(f"{pct(off)} → {pct(on)}{mark}")
        rows.append(row)
    for peer in peers:
        rows.append([f"peer: {PEERS[peer]}", *[f"{pct(cells[(peer, False, w)])} (no recall)"
                                              for w in windows]])  # fmt: skip
    asked = max(c.probes for c in cells.values())
    head = ["strategy", *[f"{w // 1000}K: off → on" for w in windows]]
    below = [
        f"{s} {w // 1000}K ({cells[(s, False, w)].kept} → {cells[(s, True, w)].kept})"
        for s in strategies
        for w in windows
        if not (cells[(s, False, w)].error or cells[(s, True, w)].error)
        and cells[(s, True, w)].kept < cells[(s, False, w)].kept
    ]
    failed = [
        f"{s} {w // 1000}K recall {'on' if r else 'off'}: {cells[(s, r, w)].error}"
        for s in strategies
        for w in windows
        for r in (False, True)
        if cells[(s, r, w)].error
    ]
    over = [
        f"{s} {w // 1000}K{'' if s in PEERS else ' recall ' + ('on' if r else 'off')}: "
        f"{cells[(s, r, w)].over_window}"
        for s in [*strategies, *peers]
        for w in windows
        for r in ((False,) if s in PEERS else (False, True))
        if cells[(s, r, w)].over_window
    ]
    return [
        *table(head, rows),
        "",
        f"Answers per cell: {asked}. Recall on keeps fewer than off in {len(below)} of "
        f"{len(strategies) * len(windows)} cells" + (f": {'; '.join(below)}." if below else "."),
        *([f"Cells that raised: {'; '.join(failed)}."] if failed else []),
        *(
            [
                f"Questions asked with a prompt larger than the window (a provider refuses "
                f"them; counted as not kept): {'; '.join(over)}."
            ]
            if over
            else []
        ),
    ]


def cost_table(cells: dict[tuple[str, bool, int], Cell], strategies: Sequence[str],
               windows: Sequence[int]) -> list[str]:  # fmt: skip
    rows = []
    for w in windows:
        for s in strategies:
            for recall in (False,) if s in PEERS else (False, True):
                c = cells[(s, recall, w)]
                if c.error:
                    rows.append([f"{w // 1000}K", s, "on" if recall else "off", c.error,
                                 "", "", "", ""])  # fmt: skip
                    continue
                oa_c, oa_t, an_c, an_t = c.cache
                per = f"${c.cost / c.kept:.4f}" if c.kept else "n/a"
                rows.append(
                    [
                        f"{w // 1000}K",
                        s,
                        "on" if recall else "off",
                        f"{c.kept} of {c.probes}",
                        f"{c.calls:,}",
                        f"{100 * oa_c / max(1, oa_t):.1f}%",
                        f"{100 * an_c / max(1, an_t):.1f}%",
                        f"${c.cost:.3f} / {per}",
                    ]
                )
    head = ["window", "strategy", "recall", "kept", "model calls", "OpenAI: cached",
            "Anthropic: cached", "Anthropic $ in all / per kept answer"]  # fmt: skip
    return table(head, rows, left=3)


def time_table(cells: dict[tuple[str, bool, int], Cell], warnings: dict[Any, int],
               strategies: Sequence[str], windows: Sequence[int]) -> list[str]:  # fmt: skip
    rows = []
    for s in strategies:
        for recall in (False,) if s in PEERS else (False, True):
            row = [s, "on" if recall else "off"]
            for w in windows:
                c = cells[(s, recall, w)]
                row.append(f"{c.wall:.0f} / {c.cpu:.0f} ({warnings[(s, recall, w)]}"
                           f"{_said(c.timeouts)})")  # fmt: skip
            rows.append(row)
    head = ["strategy", "recall", *[f"{w // 1000}K" for w in windows]]
    return table(head, rows, left=2)


def _said(timeouts: Counter[str]) -> str:
    """``; 3 recall_timeout`` for a cell where something ran out of time, else nothing."""
    return "".join(f"; {n} {kind}" for kind, n in sorted(timeouts.items()))


def kinds_table(cells: dict[tuple[str, bool, int], Cell], strategies: Sequence[str],
                windows: Sequence[int]) -> list[str]:  # fmt: skip
    rows = []
    kinds = sorted({k for c in cells.values() for k in c.kinds})
    for w in windows:
        for s in strategies:
            row = [f"{w // 1000}K", s]
            for k in kinds:
                off, on = cells[(s, False, w)], cells[(s, True, w)]
                parts = []
                for c in (off, on):
                    n = c.kinds[k]
                    parts.append(c.error.split(" (")[0] if c.error else
                                 f"{c.by_kind[k]}/{n}")  # fmt: skip
                row.append(" → ".join(parts))
            rows.append(row)
    return table(["window", "strategy", *[f"{k}: off → on" for k in kinds]], rows, left=2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    parser.add_argument("--windows", type=int, nargs="+", default=list(WINDOWS))
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument("--bfcl", nargs="+", default=list(BFCL_SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--tau", type=int, help="tau-bench trajectories (default 2, quick; 4)")
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=list(PEERS))
    parser.add_argument(
        "--seed", type=int, help="first conversation seed (default: 0 with --quick, else 1000)"
    )
    parser.add_argument("--sessions", type=int, help="sessions per conversation")
    parser.add_argument("--workers", type=int, default=2, help="cells run in parallel")
    parser.add_argument("--data", type=Path, help="the shared data (default ../shared/data)")
    parser.add_argument("--out", default="answers_kept", help="results file stem")
    args = parser.parse_args(argv)
    bad = sorted(set(args.strategies) - set(STRATEGIES))
    if bad:
        parser.error(f"unknown strategy {bad[0]!r}; choose from {list(STRATEGIES)}")
    if any(w < 1_000 for w in args.windows):
        parser.error("windows are in tokens, at least 1000")
    loads = []
    for name in args.workloads:
        if name == "conversations":
            seed = args.seed if args.seed is not None else 0 if args.quick else HELD_OUT
            loads.append(conversations(args.quick, seed, args.sessions))
        else:
            from harness.realdata import data_dir

            data = data_dir(args.data)
            if name == "bfcl":
                loads.append(bfcl(args.quick, data, args.bfcl))
            else:
                loads.append(tau(args.quick, data, args.tau))
    tasks = [
        (load, s, recall, w, w in CACHE_WINDOWS)
        for load in loads
        for w in args.windows
        for s in [*args.strategies, *args.peers]
        for recall in ((False,) if s in PEERS else (False, True))
    ]
    started = time.perf_counter()
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(_task, tasks))
    else:
        results = [_task(t) for t in tasks]
    elapsed = time.perf_counter() - started
    done = {(t[0].name, t[1], t[2], t[3]): r for t, r in zip(tasks, results, strict=True)}

    lines = header("Answers kept with the defaults, question asked")
    lines += INTRO
    for load in loads:
        cells = {k[1:]: v[0] for k, v in done.items() if k[0] == load.name}
        warned = {k[1:]: v[1] for k, v in done.items() if k[0] == load.name}
        lines += [f"### {load.title}", "", load.note + ".", ""]
        lines += kept_table(cells, args.strategies, args.windows, args.peers)
        if load.name == "conversations":
            small = [w for w in args.windows if w <= 8_000]
            lines += ["", "By kind of question:", "", *kinds_table(cells, args.strategies, small)]
            lines += ["", *held_out(cells, args.windows)]
        cached = [w for w in args.windows if w in CACHE_WINDOWS]
        if cached:
            lines += ["", "Prompt cache and cost at the large windows (every model call):", ""]
            lines += cost_table(cells, [*args.strategies, *args.peers], cached)
        lines += ["", "Wall / CPU seconds per cell (package warnings logged; and any "
                  "timeouts in the ledger, e.g. `recall_timeout`: recall's stores get 2 s, "
                  "and a loaded machine can pass that, so a cell with one may move from run "
                  "to run):", ""]  # fmt: skip
        lines += time_table(cells, warned, [*args.strategies, *args.peers], args.windows)
        lines += [""]
    command = "python benchmarks/answers_kept.py"
    if argv:
        command += " " + " ".join(argv)
    lines += [f"Command: `{command}` ({elapsed / 60:.1f} minutes, {args.workers} worker(s))."]
    emit(args.out, lines)
    return 0


def held_out(cells: dict[tuple[str, bool, int], Cell], windows: Sequence[int]) -> list[str]:
    """Where the defaults stand against the issue's targets on these conversations."""
    out = []
    for w, target in ((4_000, 0.70), (2_000, 0.55)):
        if ("tiered", True, w) not in cells:
            continue
        on, off = cells[("tiered", True, w)], cells[("tiered", False, w)]
        if on.error or off.error:
            out.append(f"- {w // 1000}K: {on.error or off.error}.")
            continue
        verdict = "meets" if on.share >= target and on.kept >= off.kept else "misses"
        peers = [f"{p} {pct(cells[(p, False, w)])}" for p in PEERS if (p, False, w) in cells]
        out.append(
            f"- Defaults (tiered) at {w // 1000}K: recall on {100 * on.share:.1f}%, off "
            f"{100 * off.share:.1f}%; the target is at least {target:.0%} and never below "
            f"off: {verdict} it." + (f" Peers: {', '.join(peers)}." if peers else "")
        )
    return ["Against the issue's target (defaults, recall on):", "", *out] if out else []


INTRO = [
    "`create_context_agent(model, tools, budget=Budget.for_window(W), strategy=S, "
    "recall=R)` with every other option at its default (`think` on), a SQLite file "
    "checkpointer, one `invoke` per user turn; the model is the scripted one playing "
    "the recorded assistant, and the question is asked as the next user turn. An answer is "
    "kept when it is in the prompt `call_llm` receives on the question's turn (after "
    "`think`'s call). Each cell: recall off → recall on; **(on < off)** marks a cell where "
    "recall on keeps fewer. An error's class stands in a cell that raised (the run goes "
    "on). How each workload is built and checked: the docstring of "
    "`benchmarks/answers_kept.py`.",
    "",
]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
