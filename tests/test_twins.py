"""Each behaviour is written once: no sync/async twin copied by hand, few repeated runs.

Two checks over ``langgraph_ctx/``:

- a sync function and an async function of one module whose bodies, once ``await``
  and ``async`` are taken out and ``aput``/``put``-style names are folded together,
  share a run of six or more lines: the async one should delegate, or both should
  call one shared piece, instead of repeating the logic;
- pylint's duplicate-code check (runs of six or more lines repeated across files).
"""

from __future__ import annotations

import ast
import difflib
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "langgraph_ctx"
MIN_LINES = 6


class _Desugar(ast.NodeTransformer):
    """Folds an async body onto its sync shape: ``await x`` -> ``x``, ``aput`` -> ``put``."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def _fold(self, name: str) -> str:
        return name[1:] if name.startswith("a") and name[1:] in self.names else name

    def visit_Await(self, node: ast.Await) -> ast.AST:
        return self.visit(node.value)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        node.attr = self._fold(node.attr)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._fold(node.id)
        return node

    def visit_AsyncWith(self, node: ast.AsyncWith) -> ast.AST:
        self.generic_visit(node)
        return ast.With(items=node.items, body=node.body, type_comment=None)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> ast.AST:
        self.generic_visit(node)
        return ast.For(
            target=node.target,
            iter=node.iter,
            body=node.body,
            orelse=node.orelse,
            type_comment=None,
        )


def _body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef, names: set[str]) -> list[str]:
    body = [
        s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    module = _Desugar(names).visit(ast.Module(body=body, type_ignores=[]))
    lines = ast.unparse(ast.fix_missing_locations(module)).splitlines()
    return [line.strip() for line in lines if line.strip()]


def twins(source: str) -> list[tuple[str, str, int]]:
    """(sync name, async name, longest shared run) for every pair sharing MIN_LINES or more."""
    tree = ast.parse(source)
    functions = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {f.name for f in functions}
    sync = [f for f in functions if isinstance(f, ast.FunctionDef)]
    found = []
    for a in (f for f in functions if isinstance(f, ast.AsyncFunctionDef)):
        a_lines = _body_lines(a, names)
        for s in sync:
            s_lines = _body_lines(s, names)
            matcher = difflib.SequenceMatcher(None, s_lines, a_lines, autojunk=False)
            run = max((b.size for b in matcher.get_matching_blocks()), default=0)
            if run >= MIN_LINES:
                found.append((s.name, a.name, run))
    return found


def test_the_twin_check_finds_a_copied_async_method() -> None:
    copied = """
class Store:
    def put(self, key, value):
        if key is None:
            raise ValueError("key")
        row = (key, value)
        with self.lock:
            self.rows.append(row)
            self.count += 1
        return row

    async def aput(self, key, value):
        if key is None:
            raise ValueError("key")
        row = (key, value)
        async with self.alock:
            self.rows.append(row)
            self.count += 1
        return row
"""
    delegating = """
class Store:
    def put(self, key, value):
        if key is None:
            raise ValueError("key")
        row = (key, value)
        with self.lock:
            self.rows.append(row)
            self.count += 1
        return row

    async def aput(self, key, value):
        return await asyncio.to_thread(self.put, key, value)
"""
    assert twins(copied) == [("put", "aput", 7)]
    assert twins(delegating) == []


# The one place sync and async must differ: the chain's own runners. A sync
# ``call_next`` cannot hold its attempt open across an ``await``, so each runner
# has its own seven-line skeleton around the shared _Attempt, handlers and hooks.
# Drivers of logic written once (a generator of steps), one per kind of backend; and
# the saver interface, which LangGraph defines as a put/aput pair that each only hands
# retention's plan to its driver.
RUNNERS = {
    "pipeline/chain.py": [("step", "arun_layers", 7)],
    "storage/retention.py": [("run", "arun", 6)],
    "storage/retaining.py": [("put", "aput", 8), ("_lgctx_do", "_lgctx_do", 18)],
}


@pytest.mark.slow
def test_no_sync_async_twin_in_the_package() -> None:
    found = {
        str(path.relative_to(PACKAGE)): pairs
        for path in sorted(PACKAGE.rglob("*.py"))
        if (pairs := twins(path.read_text(encoding="utf-8")))
    }
    for where, pairs in RUNNERS.items():
        assert found.pop(where, None) == pairs, "the runners changed: look again"
    assert found == {}, f"sync/async twins (write the logic once): {found}"


@pytest.mark.slow
def test_no_runs_repeated_across_modules() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pylint",
            "--disable=all",
            "--enable=duplicate-code",
            f"--min-similarity-lines={MIN_LINES}",
            "--ignore-imports=y",
            "--score=n",
            str(PACKAGE),
        ],
        capture_output=True,
        text=True,
    )
    assert "R0801" not in result.stdout, result.stdout
