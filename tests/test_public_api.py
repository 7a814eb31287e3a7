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


def test_modules_moved_in_0_2_import_from_their_old_path_with_a_warning() -> None:
    # One release of grace: `import langgraph_ctx.persistence` is the new module, and says so.
    import subprocess
    import sys

    from langgraph_ctx._moved import MOVED

    code = (
        "import importlib, warnings\n"
        "from langgraph_ctx._moved import MOVED\n"
        "for old, new in MOVED.items():\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        "        module = importlib.import_module(old)\n"
        "    assert module is importlib.import_module(new), old\n"
        "    assert any(new in str(w.message) and w.category is DeprecationWarning\n"
        "               for w in caught), old\n"
        "from langgraph_ctx.nodes.think import Thought\n"  # a submodule of a moved package
        "from langgraph_ctx.agent import Thought as T2\n"
        "assert Thought is T2\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert len(MOVED) >= 20
    for new in MOVED.values():  # every target exists
        importlib.import_module(new)
