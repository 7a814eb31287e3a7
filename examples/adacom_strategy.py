"""AdaCoM: an external manager edits the agent's context, in one argument.

Run it: ``python examples/adacom_strategy.py``. The agent is the scripted model
(no network, no API key) in a real compiled graph checkpointed in SQLite; the
manager is a scripted chat model too, answering AdaCoM's structured output. Swap
in any LangChain chat models; ``summary_model=`` is the manager's seat.

Each lookup returns a long catalogue page. Before the agent reads it, the
manager is triggered (an oversized tool result) and rewrites it to what the
task needs, and keeps a working note right after the task. The originals stay
in the archive, retrievable by id.
"""

from __future__ import annotations

import itertools
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool

from langgraph_ctx.agent import create_context_agent
from langgraph_ctx.edits import is_note
from langgraph_ctx.storage.archive import SQLiteArchive
from langgraph_ctx.testing import ScriptedChatModel

TASK = "Find a pump under $300 that ships before Friday. Check pages 1 to 3."


@tool
def catalogue(page: int) -> str:
    """One page of the pump catalogue."""
    rows = [f"Pump PX-{page}{k:02d}: ${150 + 37 * k}, ships in {k % 6} days." for k in range(200)]
    return " ".join(rows)


pages = itertools.count(1)


def agent_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted agent: read the next page until three are read, then answer."""
    n = next(pages)
    if n <= 3:
        return AIMessage("", tool_calls=[{"name": "catalogue", "args": {"page": n}, "id": f"p{n}"}])
    note = next((m.text for m in messages if is_note(m)), "")
    return AIMessage(f"From my notes: {note.splitlines()[-1]}")


def manager_reply(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The scripted manager: extract each new page to its cheap, fast pumps; note them."""
    listing = messages[-1].text
    mods: list[dict[str, Any]] = []
    found: list[str] = []
    for block in listing.split("\n\n"):
        if "EXTRACT" not in block.splitlines()[0]:
            continue
        mid = re.search(r"id=(\S+)", block).group(1)  # type: ignore[union-attr]
        hits = re.findall(r"(PX-\d+): \$(\d+), ships in ([0-3]) days", block)
        keep = [f"{p} ${price}, {days} d" for p, price, days in hits if int(price) < 300]
        found += keep[:2]
        mods.append(
            {
                "ids": [mid],
                "role": "tool",
                "justification": "extract",
                "new_content": "; ".join(keep),
            }
        )
    note_id = re.search(r"id=(\S+) role=\S+ tokens=\d+.*WORKING NOTE", listing).group(1)  # type: ignore[union-attr]
    old = re.search(r"WORKING NOTE[^\n]*\n(.*?)(?:\n\n|$)", listing, re.S).group(1)  # type: ignore[union-attr]
    lead = old.splitlines()[-1] if "lead:" in old else "lead:"
    text = f"[Working note]\nmust: under $300, ships before Friday\n{lead} {' '.join(found)}"
    mods.append({"ids": [note_id], "role": None, "justification": "note", "new_content": text})
    return {"modifications": mods}


def main(folder: str | None = None) -> dict[str, Any]:
    folder = folder or tempfile.mkdtemp()
    archive = SQLiteArchive(str(Path(folder) / "archive.sqlite"))
    manager = ScriptedChatModel(structured_default=manager_reply)
    agent = create_context_agent(
        ScriptedChatModel(default=agent_reply),
        [catalogue],
        think=False,
        always_include=["catalogue"],
        strategy="adacom",
        summary_model=manager,  # the manager's seat
        archive=archive,
        checkpointer=f"sqlite:///{Path(folder) / 'checkpoints.sqlite'}",
    )
    config: Any = {"configurable": {"thread_id": "pumps"}}
    state = agent.invoke({"messages": [HumanMessage(TASK)]}, config)
    tools = [m for m in state["messages"] if m.type == "tool"]
    edits = [e for e in state["context_ledger"] if e["kind"] == "context_edit"]
    originals = archive.list("pumps")
    print("answer:", state["messages"][-1].text)
    print(
        f"tool results kept: {sum(len(m.text) for m in tools)} chars "
        f"(originals archived: {sum(len(m.text) for m in originals if m.type == 'tool')} chars)"
    )
    print(f"manager edits: {len(edits)}; archived originals: {len(originals)}")
    return {"state": state, "edits": edits, "originals": originals}


if __name__ == "__main__":
    main()
