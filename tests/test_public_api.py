"""The public API is exactly what ``__all__`` says."""

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import langgraph_ctx


def test_all_matches_public_names() -> None:
    public = {n for n in vars(langgraph_ctx) if not n.startswith("_")}
    modules = {m.name for m in pkgutil.iter_modules(langgraph_ctx.__path__)}
    # Submodules become attributes once imported; they are namespaces, not API.
    exported = public - modules
    assert exported == set(langgraph_ctx.__all__)


def test_all_has_no_duplicates_and_imports() -> None:
    assert len(set(langgraph_ctx.__all__)) == len(langgraph_ctx.__all__)
    for name in langgraph_ctx.__all__:
        assert getattr(langgraph_ctx, name) is not None


def test_subpackages_export_what_they_define() -> None:
    for name in ("langgraph_ctx.middleware", "langgraph_ctx.agent.nodes", "langgraph_ctx.testing"):
        module = importlib.import_module(name)
        for item in module.__all__:
            obj = getattr(module, item)
            assert inspect.getmodule(obj).__name__.startswith(name)


SUBPACKAGE_NAMES = 80
"""What the subpackages' ``__all__``s may name together (issue 32): what a user imports
from them, documented in README.md and docs/; the rest is imported from its module."""


def test_subpackages_export_few_names() -> None:
    subpackages = [m.name for m in pkgutil.iter_modules(langgraph_ctx.__path__) if m.ispkg]
    exported: dict[str, list[str]] = {}
    for name in subpackages:
        module = importlib.import_module(f"langgraph_ctx.{name}")
        exported[name] = list(module.__all__)
        # Each name is really there (a stale __all__ entry would fail on import *).
        for item in module.__all__:
            assert getattr(module, item) is not None, f"langgraph_ctx.{name}.{item}"
    assert len(exported) >= 12, exported  # every subpackage counted, none missed
    total = sum(len(names) for names in exported.values())
    assert total <= SUBPACKAGE_NAMES, {k: len(v) for k, v in exported.items()}


@pytest.mark.slow
def test_core_imports_without_optional_extras() -> None:
    # The core must not import postgres, plotting or embedding packages.
    code = (
        "import sys, langgraph_ctx, langgraph_ctx.middleware, langgraph_ctx.testing\n"
        "bad = [m for m in ('psycopg', 'matplotlib', 'torch', 'langchain.agents', 'langmem') "
        "if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_version_is_the_installed_distributions() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["version"]
    assert langgraph_ctx.__version__ == declared
    assert "__version__" not in langgraph_ctx.__all__  # metadata, not API
    assert len(langgraph_ctx.__all__) == 63


@pytest.mark.slow
def test_version_without_installed_metadata_says_unknown() -> None:
    # A source tree on sys.path that was never installed: a clear placeholder, no crash.
    code = (
        "import importlib.metadata as m\n"
        "def missing(name):\n"
        "    raise m.PackageNotFoundError(name)\n"
        "m.version = missing\n"
        "import langgraph_ctx\n"
        "print(langgraph_ctx.__version__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0.0.0+unknown"
