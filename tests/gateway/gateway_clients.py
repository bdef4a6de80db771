"""The real agent clients the gateway tests drive: where they are, and the gateway command they talk to.

``.ci/run`` installs them, pinned, under ``$CONTEXTWRIGHT_CLIENTS`` (default
``~/.cache/contextwright-clients``): Claude Code from npm into ``claude-code/``, the Codex
CLI from npm into ``codex/``, aider from PyPI into a virtual environment of its own,
``aider/`` (its pinned dependencies would clash with this project's). Outside CI a test whose client is absent skips and says how
to install it; under ``CI=true`` it fails instead, so a broken install is never silent.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from contextwright.testing.service import free_port

CLAUDE_CODE_VERSION = "2.1.328"
CODEX_VERSION = "0.169.0"
AIDER_VERSION = "0.86.2"


def clients_dir() -> Path:
    return Path(os.environ.get("CONTEXTWRIGHT_CLIENTS") or Path.home() / ".cache" / "contextwright-clients")


def client_binary(folder: str, name: str, *, package: str, version: str, pypi: bool = False) -> Path:
    """The client's executable; skips (fails under CI) when it is not installed."""
    path = clients_dir() / folder / ("bin" if pypi else "node_modules/.bin") / name
    if path.exists():
        return path
    install = (
        f"python3 -m venv {clients_dir() / folder} && {clients_dir() / folder}/bin/pip install {package}=={version}"
        if pypi
        else f"npm install --prefix {clients_dir() / folder} {package}@{version}"
    )
    reason = f"{package} is not installed at {path}: {install} (as .ci/run does)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def client_env(home: Path, **extra: str) -> dict[str, str]:
    """A minimal environment: the client's home in a temporary folder, no telemetry, no update checks."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **extra,
    }


@contextmanager
def gateway_command(store: Path, upstream: str, output: Path, *extra: str, mode: str = "observe") -> Iterator[str]:
    """``contextwright gateway`` in its own process, as a user starts it; yields its URL, stops it afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "contextwright", "gateway", "--store", str(store), "--port", str(port)]
    command += ["--mode", mode, "--anthropic-upstream", upstream, "--openai-upstream", upstream, *extra]
    with output.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"the gateway exited at start: {output.read_text()[-2000:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("the gateway did not start in 30 s") from None
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
