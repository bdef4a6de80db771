"""``contextwright serve`` as users run it: a subprocess with several workers on one store."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.service.conftest import NEEDS

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)

import httpx2

from contextwright.service.store import open_service_store
from contextwright.testing.service import free_port


def test_serve_with_two_workers_serves_any_session_from_any_worker(tmp_path):
    store, port = f"sqlite:///{tmp_path}/store.db", free_port()
    command = [sys.executable, "-m", "contextwright", "serve", "--store", store, "--port", str(port), "--workers", "2"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx2.get(f"{base}/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.2)
        # The key is created after the workers started: they read keys from the store, not from memory.
        with open_service_store(store) as keys:
            _, key = keys.create_key("workers")
        auth = {"Authorization": f"Bearer {key}"}
        spec = {"session_id": "w", "agent": {"policy": "p"}, "model": {"provider": "anthropic", "id": "claude-sonnet-4-6"}}
        assert httpx2.post(f"{base}/v1/sessions", json=spec, headers=auth).status_code == 201
        # Each write on a fresh connection, so the two workers take turns at random.
        for n in range(12):
            response = httpx2.post(f"{base}/v1/sessions/w/messages", json={"text": f"m{n}", "expected_seq": n}, headers=auth)
            assert response.status_code == 201, response.text
        response = httpx2.post(f"{base}/v1/sessions/w/requests", json={}, headers=auth)
        assert response.status_code == 201
        seen = httpx2.get(f"{base}/v1/sessions/w/requests/0", headers=auth).json()
        assert seen["verified"]
    finally:
        server.terminate()
        server.wait(timeout=30)
