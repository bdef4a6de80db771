"""Run the HTTP service on loopback for a test: a real uvicorn server in a thread."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(app: Any, *, startup_timeout: float = 20.0) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port; yield its base URL; stop it afterwards."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the test server on port {port} did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=startup_timeout)


class WorkerProcess:
    """One service worker in its own process (uvicorn on a loopback port), to kill and restart."""

    def __init__(self, config: Any, *, port: int | None = None, env: dict[str, str] | None = None) -> None:
        self.config = config
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._env = env
        self.process: subprocess.Popen[bytes] | None = None
        # stderr to a file, not a pipe (a worker that logs a lot must never block on a full pipe),
        # opened for appending so that every restart adds to it and reading it moves nothing.
        self.stderr = tempfile.TemporaryFile(mode="a+b")

    def start(self, *, timeout: float = 30.0) -> WorkerProcess:
        """Start the process and wait until it answers on its port."""
        env = {**os.environ, **(self._env or {}), **self.config.to_env()}
        command = [sys.executable, "-m", "uvicorn", "contextwright.service.app:app_from_env", "--factory"]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning", "--no-access-log"]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the worker on port {self.port} exited at start: {self.errors()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError(f"the worker on port {self.port} did not start in {timeout} s") from None
                time.sleep(0.05)

    def errors(self) -> str:
        """What the worker wrote to stderr so far, over all its starts."""
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    @property
    def alive(self) -> bool:
        """True while the process runs."""
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown, no goodbye to the database; leases and connections die with the process."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM and wait (uvicorn finishes what it is doing and runs the shutdown)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
