"""One session key's recording jobs run one at a time, in order, whether queued on the loop or taken by a thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

from contextwright.gateway.recorder import KeyQueue


def test_jobs_of_one_key_run_in_the_order_queued() -> None:
    async def scenario() -> list[str]:
        queue, ran = KeyQueue(), list[str]()

        def job(name: str, pause: float) -> Callable[[], Awaitable[str]]:
            async def run() -> str:
                await asyncio.sleep(pause)
                ran.append(name)
                return name

            return run

        tasks = [queue.submit("k", job("first", 0.05)), queue.submit("k", job("second", 0)), queue.submit("other", job("x", 0))]
        assert await asyncio.gather(*tasks) == ["first", "second", "x"]
        return ran

    assert asyncio.run(scenario()) == ["x", "first", "second"]


def test_a_key_taken_by_a_thread_holds_later_jobs_until_its_job_ends() -> None:
    async def scenario() -> list[str]:
        queue, ran = KeyQueue(), list[str]()
        claim = await asyncio.to_thread(queue.claim, "k")
        assert claim is not None
        assert await asyncio.to_thread(queue.claim, "k") is None  # taken: a second thread queues instead
        later = queue.submit("k", _append(ran, "later"))
        answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def claimed() -> None:
            await answer  # the taken key's job (an answer's recording) waits for its answer
            ran.append("claimed")

        first = queue.submit_claimed("k", claim, claimed)
        await asyncio.sleep(0.05)
        assert ran == []  # the later job waits for the claimed one
        answer.set_result(None)
        await asyncio.gather(first, later)
        assert queue.claim("k") is not None  # free again once both ran
        return ran

    assert asyncio.run(scenario()) == ["claimed", "later"]


def test_a_released_key_lets_the_next_job_run() -> None:
    async def scenario() -> list[str]:
        queue, ran = KeyQueue(), list[str]()
        claim = queue.claim("k")
        assert claim is not None
        later = queue.submit("k", _append(ran, "later"))
        await asyncio.sleep(0.02)
        assert ran == []
        threading.Thread(target=queue.release, args=("k", claim)).start()  # the thread's work stopped short
        await asyncio.wait_for(later, timeout=5)
        return ran

    assert asyncio.run(scenario()) == ["later"]


def _append(ran: list[str], name: str) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        ran.append(name)

    return run
