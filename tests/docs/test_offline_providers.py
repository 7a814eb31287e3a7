"""The offline provider clients the block runner uses: the request is the client's own.

Run in a subprocess, since installing them patches the client classes for good.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROBE = """
import offline_providers
offline_providers.install()
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, SystemMessage

model = ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-ant-test")
print(model.invoke([HumanMessage("Where is A-7?")]).text)
try:  # what Anthropic's client refuses is refused here too: nothing is faked around it
    model.invoke([SystemMessage("a"), HumanMessage("b"), SystemMessage("c"), HumanMessage("d")])
except Exception as exc:
    print("refused:", type(exc).__name__)
"""


@pytest.mark.slow
def test_a_block_goes_through_the_clients_payload_builder(tmp_path: Path) -> None:
    log = tmp_path / "payloads.log"
    env = {**os.environ, "PYTHONPATH": str(HERE), "DOCS_PAYLOAD_LOG": str(log)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "(offline reply)" in lines[0]
    assert lines[1].startswith("refused:")
    assert log.read_text().splitlines() == ["ChatAnthropic ['max_tokens', 'messages', 'model']"]
