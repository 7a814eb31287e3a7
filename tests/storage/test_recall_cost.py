"""Recall over the in-memory archive costs the same at turn 1,000 as at turn 200 (issue 34:
an agent with recall went from 84 to 234 ms of CPU per turn over 300 turns, with a
constant history). Work is counted, not timed: the entries the archive's index reads
(postings walked or looked up, candidates ranked; ``LexicalIndex.reads``).

Each turn archives what the turn said (its question, tool calls and results, answer) and
then searches as recall does before the next call: the question among all passages, then
among the passages naming each name in it (``searches``). The session is the seeded
workload the recall tests use, whose questions share common words ("order", "status",
customer names) with thousands of passages by the end.
"""

from __future__ import annotations

from itertools import groupby
from statistics import mean

import pytest

from langgraph_ctx.middleware.recall import searches
from langgraph_ctx.retrieval import index
from langgraph_ctx.storage.archive import InMemoryArchive
from langgraph_ctx.testing.workloads import generate_session

TURNS = 1_000


def reads_per_turn(turns: int) -> tuple[list[int], int]:
    """Index entries read by each turn's searches, and the passages indexed at the end."""
    workload = generate_session(turns, seed=3)
    archive = InMemoryArchive()
    scope = ("t", "")
    by_turn = groupby(workload.messages(), key=lambda m: str(m.id)[:5])  # "t0042-..."
    work = []
    for turn, (_, said) in zip(workload.turns, by_turn, strict=True):
        archive.put("t", list(said), reason="compressed")
        before = archive._index.reads(scope)
        for name, limit in searches(turn.user, 8, 4):
            archive.search("t", turn.user, limit=limit, within=name)
        work.append(archive._index.reads(scope) - before)
    return work, len(archive._index._shards[scope].keys)


@pytest.mark.slow  # a thousand turns: about 15 s
def test_recall_work_per_turn_is_flat_over_a_thousand_turns() -> None:
    work, passages = reads_per_turn(TURNS)
    early, late = mean(work[200:300]), mean(work[900:])
    assert passages > 5 * index.BUDGET  # the session outgrew the budget many times
    assert late <= 1.25 * early, (early, late)
    # Bounded by the budget, not by the session: every search of a turn together.
    assert max(work) <= 12 * index.BUDGET, max(work)
