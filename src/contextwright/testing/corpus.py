"""Find the shared corpora (real agent traces and real tool outputs).

The corpora are not part of this project. Tests and benchmarks look for them in
``$CONTEXTWRIGHT_SHARED`` or in a ``shared`` folder beside the checkout, and skip
with a stated reason when neither exists.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "CONTEXTWRIGHT_SHARED"

_CHECKOUT = Path(__file__).resolve().parents[3]


def shared_dir() -> Path | None:
    """Return the shared folder, or None when it is not present."""
    configured = os.environ.get(ENV_VAR)
    candidates = [Path(configured)] if configured else []
    candidates.append(_CHECKOUT.parent / "shared")
    for candidate in candidates:
        if (candidate / "traces").is_dir() or (candidate / "tool-outputs").is_dir():
            return candidate
    return None


def missing_reason(sub: str) -> str:
    """A one-line reason for skipping when ``shared/<sub>`` cannot be found."""
    return (
        f"shared corpus '{sub}' not found: set {ENV_VAR} or place the shared folder "
        f"beside the checkout ({_CHECKOUT.parent / 'shared'})"
    )


def corpus_path(sub: str) -> Path | None:
    """Return ``shared/<sub>`` if it exists, else None."""
    root = shared_dir()
    if root is None:
        return None
    path = root / sub
    return path if path.exists() else None
