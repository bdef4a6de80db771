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


def test_core_modules_import_only_stdlib_and_contextwright_at_top_level():
    offenders = []
    for name in filter(_is_core, _modules()):
        tree = ast.parse(_source(name).read_text())
        for node in tree.body:  # module level only; function-level imports go through require()
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            for target in targets:
                top = target.split(".")[0]
                if top not in sys.stdlib_module_names and top != "contextwright" and top != "__future__":
                    offenders.append(f"{name} imports {target}")
    assert not offenders, offenders


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
