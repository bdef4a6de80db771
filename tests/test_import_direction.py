"""The core imports only the standard library; extras stay behind their edges."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import contextwright

PACKAGE_DIR = Path(contextwright.__file__).parent
# Edges may import third-party packages at module level; everything else is core.
EDGE_PREFIXES = (
    "contextwright.__main__",
    "contextwright.cli",
    "contextwright.testing",
    "contextwright.service",
    "contextwright.gateway",
    "contextwright.integrations",
)


def _modules() -> list[str]:
    names = ["contextwright"]
    for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="contextwright."):
        names.append(info.name)
    return sorted(names)


def _is_core(name: str) -> bool:
    return not name.startswith(EDGE_PREFIXES)


def _source(name: str) -> Path:
    relative = Path(*name.split(".")[1:])
    candidate = PACKAGE_DIR / relative
    return candidate / "__init__.py" if candidate.is_dir() else candidate.with_suffix(".py")


def _required_tops(function: ast.AST) -> set[str]:
    """Top-level packages a function loads through ``require("pkg...", extra=...)``."""
    tops = set()
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "require"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            tops.add(node.args[0].value.split(".")[0])
    return tops


def _third_party_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """Imports of third-party packages anywhere in the module, except those a require() guards.

    Module level, inside functions and under TYPE_CHECKING all count. An import inside a
    function is allowed when the same function first asks ``require`` for its package,
    which turns a missing extra into an error that names it.
    """
    guarded: dict[int, set[str]] = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            tops = _required_tops(function)
            for node in ast.walk(function):
                guarded.setdefault(id(node), set()).update(tops)
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [node.module]
        for target in targets:
            top = target.split(".")[0]
            if top in sys.stdlib_module_names or top in ("contextwright", "__future__"):
                continue
            if top not in guarded.get(id(node), set()):
                found.append((node.lineno, target))
    return found


def test_core_modules_import_only_stdlib_and_contextwright_anywhere():
    # Extras are loaded through contextwright._optional.require("module", extra=...), a
    # call rather than an import statement, so it names the extra when it is missing.
    offenders = [
        f"{name}:{line} imports {target}"
        for name in filter(_is_core, _modules())
        for line, target in _third_party_imports(ast.parse(_source(name).read_text()))
    ]
    assert not offenders, offenders


def test_the_walk_sees_imports_inside_functions_and_type_checking_blocks():
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import httpx\n"
        "def f():\n    import tiktoken\n"
        "def g():\n    require('matplotlib', extra='report', feature='plots')\n    from matplotlib.figure import Figure\n"
    )
    assert _third_party_imports(ast.parse(source)) == [(3, "httpx"), (5, "tiktoken")]


BLOCKER = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top not in sys.stdlib_module_names and top != "contextwright":
            raise ImportError(f"blocked third-party import {name}")
sys.meta_path.insert(0, Block())
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
print("ok")
"""


def test_core_imports_with_the_standard_library_alone():
    core = [n for n in _modules() if _is_core(n)]
    result = subprocess.run([sys.executable, "-c", BLOCKER, *core], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]
