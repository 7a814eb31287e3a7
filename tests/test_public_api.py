"""The public API is exactly what ``__all__`` says."""

import importlib
import inspect
import pkgutil

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


def test_core_imports_without_optional_extras() -> None:
    # The core must not import postgres, plotting or embedding packages.
    import subprocess
    import sys

    code = (
        "import sys, langgraph_ctx, langgraph_ctx.middleware, langgraph_ctx.testing\n"
        "bad = [m for m in ('psycopg', 'matplotlib', 'torch', 'langchain.agents', 'langmem') "
        "if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
