"""Import optional dependencies with an error that says which extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from contextwright.errors import MissingDependencyError


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        if exc.name not in (None, top, module) and not (exc.name or "").startswith(top + "."):
            raise  # the module exists but one of its own imports failed: show that, not a hint
        raise MissingDependencyError(feature, extra, top) from exc
