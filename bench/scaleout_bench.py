"""Scale-out load and fault harness: N service workers on one PostgreSQL, M agents, workers killed, connections cut.

Run from the repository root (loopback only; PostgreSQL at $CONTEXTWRIGHT_TEST_POSTGRES,
default postgresql://postgres@127.0.0.1:5432/test; a fresh schema per phase, dropped after):

    python bench/scaleout_bench.py            # 1 -> 2 -> 4 workers (clean), then 4 workers under faults
    python bench/scaleout_bench.py --quick    # small bounded run (what the test runs)

Every worker is its own uvicorn process (as on separate machines); each agent sends each
request to the next live worker. Agents sharing a session take turns at the conversation
(as a real multi-agent app would), while any of them may record usage, compact or read
at the same time, on any worker. During the fault phase workers are SIGKILLed and
restarted, and the workers' PostgreSQL connections are cut with pg_terminate_backend
(only this run's, found by application_name). Agents retry lost answers with the same
idempotency key. Afterwards every session is verified from the log: gapless seqs, every
acknowledged write present exactly once, every request rebuilt byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import random
import statistics
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx2
import psycopg

from contextwright import models
from contextwright.canonical import parse_canonical
from contextwright.client import agent_json, model_json
from contextwright.log import open_log
from contextwright.models import ResolvedModel
from contextwright.runtime import AgentSpec, Engine, Tool
from contextwright.service import ServiceConfig
from contextwright.service.limits import RateLimit
from contextwright.service.sessions import agent_spec
from contextwright.service.store import open_service_store
from contextwright.testing.service import WorkerProcess

POSTGRES_DSN = os.environ.get("CONTEXTWRIGHT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
TENANT = "bench"
AGENT = AgentSpec(
    policy="You are a careful coding agent.",
    tools=[Tool("run_tests", "Run the test suite", {"type": "object", "properties": {"path": {"type": "string"}}})],
)
MODEL = models.anthropic("claude-sonnet-4-6")
OUTPUT = "tests/test_x.py::test_y PASSED\n" * 30 + "30 passed in 1.2s"
GIVE_UP_SECONDS = 90.0
"""An agent retries one request this long (workers restarting, leases held) before it counts a failure."""


@dataclass
class Phase:
    """One run's settings."""

    workers: int
    agents: int
    sessions: int
    duration: float
    max_requests: int
    kill_every: float | None = None
    cut_every: float | None = None
    routing: str = "affinity"


@dataclass
class Results:
    """What the agents saw, and what the fault threads did."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[str] = field(default_factory=Counter)
    acked: list[tuple[str, str, str]] = field(default_factory=list)
    """(session, kind, marker) of every write answered 2xx."""
    failures: list[str] = field(default_factory=list)
    requests: int = 0
    conflicts: int = 0
    server_retries: int = 0
    client_retries: int = 0
    kills: int = 0
    cuts: int = 0
    cut_connections: int = 0
    failed_starts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Balancer:
    """Picks a live worker for each request.

    ``affinity``: a session's requests go to its home worker (a hash of the session id),
    as a load balancer hashing on the path would, and to the next live one while it is
    down; a share of them (``stray``) go to a random other worker anyway, so workers keep
    racing on shared sessions. ``round-robin``: every request to the next live worker,
    the worst case for each worker's session cache.
    """

    def __init__(self, workers: list[WorkerProcess], *, routing: str = "affinity", stray: float = 0.2) -> None:
        self.workers = workers
        self.routing = routing
        self.stray = stray
        self.down: set[int] = set()
        self._next = 0
        self._lock = threading.Lock()
        self._random = random.Random(11)

    def pick(self, session_id: str) -> str:
        with self._lock:
            count = len(self.workers)
            if self.routing == "round-robin":
                start = self._next
                self._next += 1
            elif self._random.random() < self.stray:
                start = self._random.randrange(count)
            else:
                start = int(hashlib.sha256(session_id.encode()).hexdigest(), 16) % count
            for offset in range(count):
                index = (start + offset) % count
                if index not in self.down:
                    return self.workers[index].url
            return self.workers[start % count].url


class Agent(threading.Thread):
    """One simulated agent loop on one session, over HTTP, through the balancer."""

    def __init__(
        self, name: str, session_id: str, turn_lock: threading.Lock, key: str, balancer: Balancer, results: Results
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.session_id = session_id
        self.turn_lock = turn_lock
        self.balancer = balancer
        self.results = results
        self.stop = threading.Event()
        self.budget: Callable[[], bool] = lambda: True
        self.http = httpx2.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60)
        self.path = f"/v1/sessions/{session_id}"
        self.random = random.Random(name)

    def call(self, endpoint: str, method: str, path: str, body: dict[str, Any] | None = None, **params: Any) -> Any:
        """One request, retried across workers until answered; None when refused for the session's state."""
        deadline = time.monotonic() + GIVE_UP_SECONDS
        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1
            url = self.balancer.pick(self.session_id)
            started = time.perf_counter()
            try:
                response = self.http.request(method, url + path, json=body, params=params or None)
            except httpx2.TransportError:
                self._retrying(attempt)
                continue
            elapsed = (time.perf_counter() - started) * 1000
            with self.results.lock:
                self.results.requests += 1
                self.results.statuses[f"{response.status_code}"] += 1
                self.results.server_retries += int(response.headers.get("contextwright-retries", 0))
                if response.status_code == 409:
                    self.results.conflicts += 1
            if response.status_code in (200, 201):
                with self.results.lock:
                    self.results.latencies[endpoint].append(elapsed)
                return response.json()
            slug = _slug(response)
            if response.status_code in (429, 503) or slug in ("lease-held", "seq-conflict"):
                self._retrying(attempt)
                continue
            if slug == "session-state":
                return None
            with self.results.lock:
                self.results.failures.append(f"{endpoint}: {response.status_code} {response.text[:300]}")
            if response.status_code >= 500:
                self._retrying(attempt)
                continue
            return None
        with self.results.lock:
            self.results.failures.append(f"{endpoint}: no answer in {GIVE_UP_SECONDS} s")
        return None

    def _retrying(self, attempt: int) -> None:
        with self.results.lock:
            self.results.client_retries += 1
        time.sleep(self.random.uniform(0, min(1.0, 0.02 * 2**attempt)))

    def write(self, endpoint: str, path: str, body: dict[str, Any], kind: str, marker: str) -> Any:
        """A write with an idempotency key (the same on every retry), recorded as acknowledged when answered."""
        answer = self.call(endpoint, "POST", self.path + path, {**body, "idempotency_key": marker})
        if answer is not None:
            with self.results.lock:
                self.results.acked.append((self.session_id, kind, marker))
        return answer

    def run(self) -> None:
        body = {"session_id": self.session_id, "agent": agent_json(AGENT), "model": model_json(MODEL)}
        self.call("POST sessions", "POST", "/v1/sessions", body)
        turn = 0
        while not self.stop.is_set() and self.budget():
            turn += 1
            tag = f"{self.name}-t{turn}"
            with self.turn_lock:
                self.write("POST messages", "/messages", {"text": f"[{tag}] run the tests for module {turn}."}, "user", tag)
                self.call("POST requests", "POST", self.path + "/requests", {})
                call = {"id": f"call-{tag}", "name": "run_tests", "arguments": {"path": f"tests/m{turn}"}}
                self.write(
                    "POST assistant", "/assistant", {"text": f"[{tag}] running", "tool_calls": [call]}, "assistant", tag + "-a1"
                )
                self.write("POST tool-results", "/tool-results", {"call_id": call["id"], "output": OUTPUT}, "tool", tag + "-r")
                self.call("POST requests", "POST", self.path + "/requests", {})
                self.write("POST assistant", "/assistant", {"text": f"[{tag}] all tests pass."}, "assistant", tag + "-a2")
            # Outside the turn: what may happen on any worker while another agent works on the session.
            usage = {"input_tokens": 1200 + turn, "output_tokens": 80}
            self.write("POST usage", "/usage", usage, "usage", tag + "-u")
            roll = self.random.random()
            if roll < 0.15:
                self.call("POST compact", "POST", self.path + "/compact", {})
            elif roll < 0.35:
                self.call("GET stats", "GET", self.path + "/stats")
            elif roll < 0.55:
                self.call("GET events", "GET", self.path + "/events", after_seq=0, limit=100)
            elif roll < 0.7:
                self.call("GET requests/N", "GET", self.path + "/requests/0")


def _slug(response: httpx2.Response) -> str:
    try:
        return str(response.json().get("type", "")).rsplit("/", 1)[-1]
    except ValueError:
        return ""


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _backend_pids(application: str) -> list[int]:
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", (application,)).fetchall()
    return [int(r[0]) for r in rows]


def run_phase(phase: Phase) -> dict[str, Any]:
    """Run one phase on a fresh schema; return its numbers and its verification."""
    run_id = uuid.uuid4().hex[:10]
    application, schema = f"cwscale_{run_id}", f"cw_scale_{run_id}"
    store = f"{POSTGRES_DSN}?application_name={application}&schema={schema}"
    results = Results()
    workers: list[WorkerProcess] = []
    try:
        open_log(store, pool_size=1).close()
        with open_service_store(store, pool_size=1) as keys:
            _, key = keys.create_key(TENANT)
        # Pool per worker: the threads that touch the database at once; 4 workers x (6 + 2 + 2) stays far under 100.
        config = ServiceConfig(store=store, rate_limit=RateLimit(per_second=1e6, burst=10**6), pool_size=6, console=False)
        workers = [WorkerProcess(config) for _ in range(phase.workers)]
        for worker in workers:
            worker.start()
        balancer = Balancer(workers, routing=phase.routing)
        turn_locks = [threading.Lock() for _ in range(phase.sessions)]
        agents = [
            Agent(f"a{i}", f"s{i % phase.sessions}", turn_locks[i % phase.sessions], key, balancer, results)
            for i in range(phase.agents)
        ]

        def faults_due() -> bool:
            # A fault run goes on past its request cap until each fault it injects has happened once:
            # on a fast machine the cap can come before the first cut.
            return bool(phase.kill_every and not results.kills) or bool(phase.cut_every and not results.cuts)

        def go_on() -> bool:
            return results.requests < phase.max_requests or faults_due()

        for agent in agents:
            agent.budget = go_on
        stop = threading.Event()
        faults = _fault_threads(phase, workers, balancer, results, application, stop)
        cpu_before = {"client": _client_cpu(), "workers": sum(_cpu_seconds(w.process.pid) for w in workers if w.process)}
        started = time.monotonic()
        for agent in agents:
            agent.start()
        deadline = started + phase.duration
        while time.monotonic() < deadline and go_on():
            time.sleep(0.05)
        for agent in agents:
            agent.stop.set()
        stop.set()
        for thread in faults:
            thread.join()
        for agent in agents:
            agent.join(timeout=GIVE_UP_SECONDS + 30)
        elapsed = time.monotonic() - started
        backends = sum(_cpu_seconds(pid) for pid in _backend_pids(application))
        cpu = {
            "client": _client_cpu() - cpu_before["client"],
            "workers": sum(_cpu_seconds(w.process.pid) for w in workers if w.process) - cpu_before["workers"],
            "postgres": backends,
        }
        for worker in workers:
            worker.stop()
        crashes = [_last_error(w.errors()) for w in workers if "Traceback" in w.errors()]
        verification = verify(store, results)
        return {
            "phase": phase,
            "results": results,
            "elapsed": elapsed,
            "cpu": cpu,
            "verification": verification,
            "crashes": [c for c in crashes if c],
        }
    finally:
        for worker in workers:
            worker.kill()
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _last_error(stderr: str) -> str:
    """The last exception line a worker logged (uvicorn prints tracebacks of unhandled errors)."""
    lines = [line for line in stderr.splitlines() if line and not line.startswith((" ", "Traceback", "The above", "During"))]
    errors = [line for line in lines if "Error" in line or "Exception" in line]
    return errors[-1][:300] if errors else ""


def _client_cpu() -> float:
    times = os.times()
    return times.user + times.system


def _fault_threads(
    phase: Phase, workers: list[WorkerProcess], balancer: Balancer, results: Results, application: str, stop: threading.Event
) -> list[threading.Thread]:
    threads: list[threading.Thread] = []
    restarters: list[threading.Thread] = []
    rng = random.Random(7)
    if phase.kill_every:
        every = phase.kill_every

        def restart(index: int) -> None:
            # As a process supervisor would: a worker whose start failed (its connection was cut
            # while it migrated) is started again.
            for _ in range(10):
                try:
                    workers[index].start(timeout=60)
                except RuntimeError:
                    with results.lock:
                        results.failed_starts += 1
                    continue
                with balancer._lock:
                    balancer.down.discard(index)
                return

        def killer() -> None:
            while not stop.wait(every):
                with balancer._lock:
                    up = [i for i in range(len(workers)) if i not in balancer.down]
                    if len(up) < 2 and len(workers) > 1:
                        continue  # one worker stays up while the others restart
                    index = rng.choice(up)
                    balancer.down.add(index)
                workers[index].kill()
                with results.lock:
                    results.kills += 1
                restarter = threading.Thread(target=restart, args=(index,), daemon=True)
                restarter.start()
                restarters.append(restarter)

        def kill_and_wait() -> None:
            killer()
            for restarter in restarters:
                restarter.join()

        threads.append(threading.Thread(target=kill_and_wait, name="killer", daemon=True))
    if phase.cut_every:
        every = phase.cut_every

        def cutter() -> None:
            with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
                while not stop.wait(every):
                    rows = conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (application,)
                    ).fetchall()
                    with results.lock:
                        results.cuts += 1
                        results.cut_connections += sum(1 for r in rows if r[0])

        threads.append(threading.Thread(target=cutter, name="cutter", daemon=True))
    for thread in threads:
        thread.start()
    return threads


def verify(store: str, results: Results) -> dict[str, Any]:
    """Check every session from the log: gapless, acknowledged writes exactly once, every request rebuilt byte for byte."""
    problems: list[str] = []
    log = open_log(store, pool_size=2)
    service = open_service_store(store, pool_size=1)
    engine = Engine(log)
    sessions = requests = events_total = 0
    acked: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for session_id, kind, marker in results.acked:
        acked[session_id].append((kind, marker))
    try:
        for record in service.sessions(TENANT):
            sessions += 1
            events = log.read(record.log_session_id)
            events_total += len(events)
            if [e.seq for e in events] != list(range(1, len(events) + 1)):
                problems.append(f"{record.session_id}: seqs are not gapless")
            for kind, marker in acked[record.session_id]:
                found = sum(1 for e in events if _carries(e, kind, marker))
                if found != 1:
                    problems.append(f"{record.session_id}: acknowledged {kind} {marker} is stored {found} times")
            session = engine.session(
                record.log_session_id,
                agent=agent_spec(parse_canonical(record.agent)),
                model=ResolvedModel.from_dict(parse_canonical(record.model)),
            )
            built = sum(1 for e in events if e.type == "context.request.built")
            for index in range(built):
                try:
                    session.inspect(index)  # rebuilds from the log and checks the recorded hash
                except Exception as exc:  # every failure is reported, none stops the check
                    problems.append(f"{record.session_id}: request {index} does not rebuild: {exc}")
            requests += built
        report = log.verify()
        problems += list(report.problems)
    finally:
        service.close()
        log.close()
    return {"sessions": sessions, "events": events_total, "requests": requests, "acked": len(results.acked), "problems": problems}


def _carries(event: Any, kind: str, marker: str) -> bool:
    key = event.idempotency_key or ""
    if not key.startswith(marker + ":"):
        return False
    wanted = {"user": "message.user", "assistant": "message.assistant", "tool": "tool.result", "usage": "model.response"}
    return bool(event.type == wanted[kind])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def report(outcomes: list[dict[str, Any]], *, print_: Callable[[str], None] = print) -> None:
    """Print the scaling curve, the latency per endpoint, the CPU split and the fault summary."""
    cores = os.cpu_count() or 1
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print_(
        f"{platform.machine()}, {cores} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M %Z')}, load average {load}"
    )
    print_(f"routing: {outcomes[0]['phase'].routing}")
    print_("")
    print_(
        "| workers | faults | requests | seconds | req/s | req/s per core used | vs 1 worker | req per CPU-second | vs 1 worker "
        "| conflicts (409) | server retries | client retries | CPU ms/req: workers / postgres / client |"
    )
    print_("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    base: float | None = None
    base_efficiency: float | None = None
    for outcome in outcomes:
        phase, results = outcome["phase"], outcome["results"]
        rate = results.requests / outcome["elapsed"]
        per_core = rate / min(phase.workers, cores)
        if base is None and phase.workers == 1 and not phase.kill_every:
            base = per_core
        faults = "none"
        if phase.kill_every or phase.cut_every:
            faults = f"{results.kills} kills, {results.cuts} cuts, {results.failed_starts} restarts failed"
        cpu = outcome["cpu"]
        split = " / ".join(f"{1000 * cpu[k] / max(1, results.requests):.1f}" for k in ("workers", "postgres", "client"))
        ratio = f"{per_core / base:.2f}" if base else ""
        # Requests per CPU-second of every part (workers, PostgreSQL, the agents): the per-core
        # efficiency, which other work on a shared machine does not distort the way wall-clock rates are.
        efficiency = results.requests / max(1e-9, sum(cpu.values()))
        if base_efficiency is None and phase.workers == 1 and not phase.kill_every:
            base_efficiency = efficiency
        eff, eff_ratio = f"{efficiency:.1f}", f"{efficiency / base_efficiency:.2f}" if base_efficiency else ""
        if phase.kill_every or phase.cut_every:
            # A killed worker's CPU and a cut backend's CPU leave with them: no honest split here.
            eff, eff_ratio, split = "n/a", "n/a", "n/a (processes killed)"
        print_(
            f"| {phase.workers} | {faults} | {results.requests} | {outcome['elapsed']:.1f} | {rate:.1f} | {per_core:.1f} | {ratio} | "
            f"{eff} | {eff_ratio} | {results.conflicts} | {results.server_retries} | {results.client_retries} | {split} |"
        )
    print_("")
    print_("| workers | faults | endpoint | n | p50 ms | p95 ms | p99 ms |")
    print_("|---|---|---|---|---|---|---|")
    for outcome in outcomes:
        phase, results = outcome["phase"], outcome["results"]
        faults = "yes" if phase.kill_every or phase.cut_every else "no"
        for endpoint in sorted(results.latencies):
            values = results.latencies[endpoint]
            print_(
                f"| {phase.workers} | {faults} | {endpoint} | {len(values)} | {statistics.median(values):.1f} | "
                f"{_pct(values, 0.95):.1f} | {_pct(values, 0.99):.1f} |"
            )
    print_("")
    print_(
        "| workers | faults | sessions | events | requests rebuilt | acknowledged writes | kills | connection cuts (backends) | failed requests | verification problems |"
    )
    print_("|---|---|---|---|---|---|---|---|---|---|")
    for outcome in outcomes:
        phase, results, v = outcome["phase"], outcome["results"], outcome["verification"]
        faults = "yes" if phase.kill_every or phase.cut_every else "no"
        print_(
            f"| {phase.workers} | {faults} | {v['sessions']} | {v['events']} | {v['requests']} | {v['acked']} | {results.kills} | "
            f"{results.cuts} ({results.cut_connections}) | {len(results.failures)} | {len(v['problems'])} |"
        )
    for outcome in outcomes:
        for line in outcome["results"].failures[:5] + outcome["verification"]["problems"][:5]:
            print_(f"  ! {line}")


def phases(*, quick: bool, workers: list[int], duration: float, agents: int, routing: str = "affinity") -> list[Phase]:
    """The clean scaling phases, then the fault phase on the most workers."""
    if quick:
        return [Phase(workers=2, agents=4, sessions=3, duration=8, max_requests=400, kill_every=2.0, cut_every=1.5)]
    sessions = max(1, agents * 2 // 3)  # a third of the agents share a session with another
    base = Phase(workers=1, agents=agents, sessions=sessions, duration=duration, max_requests=100_000, routing=routing)
    clean = [replace(base, workers=n) for n in workers]
    faulty = replace(base, workers=max(workers), duration=5 * duration, kill_every=1.5, cut_every=3.0)
    return [*clean, faulty]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small bounded fault run on 2 workers")
    parser.add_argument("--workers", default="1,2,4", help="worker counts of the clean phases")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per clean phase (the fault phase runs 5x)")
    parser.add_argument("--agents", type=int, default=12, help="concurrent simulated agents")
    parser.add_argument("--routing", choices=["affinity", "round-robin"], default="affinity", help="how requests find a worker")
    args = parser.parse_args()
    workers = [int(n) for n in args.workers.split(",")]
    plan = phases(quick=args.quick, workers=workers, duration=args.duration, agents=args.agents, routing=args.routing)
    outcomes = [run_phase(phase) for phase in plan]
    report(outcomes)


if __name__ == "__main__":
    main()
