"""Fixtures for the estimator tests: exact counters and the benchmark's corpus loader."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "estimator_bench.py"


@pytest.fixture(scope="session")
def o200k() -> Callable[[str], int]:
    """Exact o200k_base token counter (skips without tiktoken)."""
    pytest.importorskip("tiktoken")
    from contextwright.budget._tokenizers import exact_token_counter

    return exact_token_counter("o200k_base")


@pytest.fixture(scope="session")
def bench() -> ModuleType:
    """The benchmark module, which owns the corpus payload loader."""
    spec = importlib.util.spec_from_file_location("estimator_bench", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module
