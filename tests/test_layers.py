"""The layer contracts in pyproject.toml hold, and the check really catches a wrong import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="the layer check needs import-linter (the dev extra)")

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"
CONFIG = ROOT / "pyproject.toml"
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _lint(source: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo", str(CONFIG)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_layer_contracts_hold(tmp_path: Path) -> None:
    result = _lint(SOURCE, tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


PROBES = {
    "module level": "from contextwright.runtime.session import Session\n",
    "inside a function": "def f():\n    from contextwright.runtime.session import Session\n\n    return Session\n",
    "under TYPE_CHECKING": (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from contextwright.runtime.session import Session\n"
    ),
}


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A throwaway copy of the package, free to break."""
    shutil.copytree(SOURCE / "contextwright", tmp_path / "src" / "contextwright", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "src"


@pytest.mark.parametrize("placement", sorted(PROBES))
def test_the_check_fails_on_a_core_module_importing_the_runtime(copy: Path, placement: str) -> None:
    (copy / "contextwright" / "events" / "probe.py").write_text(PROBES[placement])
    result = _lint(copy, copy.parent)
    assert result.returncode != 0
    # Check: the layers, the core's forbidden list and the cycle check all name the edge.
    assert "contextwright.events.probe -> contextwright.runtime.session" in result.stdout
    assert "Faces, runtime, adapters and core are layered BROKEN" in result.stdout
    assert "The core imports no adapter, runtime or face BROKEN" in result.stdout
    assert "No cycles between sibling packages BROKEN" in result.stdout


def test_the_check_fails_on_a_store_importing_a_renderer(copy: Path) -> None:
    (copy / "contextwright" / "log" / "probe.py").write_text("from contextwright.providers.wires import anthropic\n")
    result = _lint(copy, copy.parent)
    assert result.returncode != 0
    assert "contextwright.log.probe -> contextwright.providers.wires.anthropic" in result.stdout
    assert "Stores and provider renderers do not know each other BROKEN" in result.stdout


def test_the_check_fails_on_the_send_path_loading_prices(copy: Path) -> None:
    # The runtime sits above pricing in the layers; sending and streaming still may not reach it.
    sending = copy / "contextwright" / "runtime" / "sending.py"
    sending.write_text(sending.read_text() + "\nfrom contextwright.pricing import prices  # noqa: E402\n")
    result = _lint(copy, copy.parent)
    assert result.returncode != 0
    assert "contextwright.runtime.sending -> contextwright.pricing.prices" in result.stdout
    assert "Sending and streaming never load prices or the cache simulators BROKEN" in result.stdout
    assert "Faces, runtime, adapters and core are layered KEPT" in result.stdout


def test_the_check_fails_on_a_store_importing_the_builder(copy: Path) -> None:
    # The layer order alone would let a store import the builder, which sits below it.
    (copy / "contextwright" / "log" / "probe.py").write_text("from contextwright.assembly import request\n")
    result = _lint(copy, copy.parent)
    assert result.returncode != 0
    assert "contextwright.log.probe -> contextwright.assembly.request" in result.stdout
    assert "The stores know events and canonical JSON, never the planner, the builder or" in result.stdout
    assert "Faces, runtime, adapters and core are layered KEPT" in result.stdout


def test_the_check_fails_on_a_cycle_inside_a_package(copy: Path) -> None:
    # Check: two modules that import each other (one of them lazily) form a cycle.
    (copy / "contextwright" / "derive" / "probe_a.py").write_text("from contextwright.derive import probe_b\n")
    (copy / "contextwright" / "derive" / "probe_b.py").write_text("def f():\n    from contextwright.derive import probe_a\n")
    result = _lint(copy, copy.parent)
    assert result.returncode != 0
    assert "No cycles are allowed in contextwright.derive" in result.stdout
