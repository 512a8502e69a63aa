"""PushWorkers holding a connection's next push until its proxy answered the last one."""

from __future__ import annotations

import asyncio

from pilothouse.config.model import ConfigKey
from pilothouse.push.queue import PushQueue
from pilothouse.push.request import PushRequest
from pilothouse.push.workers import PushWorkers


def push(i: int) -> PushRequest:
    return PushRequest.for_configs([ConfigKey("Sidecar", "default", f"s{i}")], start=0.0)


class Proxies:
    """What the workers push to: each push is recorded, and each connection's answer
    is a future the test resolves (a proxy ACKing), or none once it answered."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, PushRequest]] = []
        self.at: list[float] = []
        """The loop's time at each push."""
        self.answers: dict[str, asyncio.Future[None]] = {}

    def push(self, conn: str, request: PushRequest) -> None:
        self.seen.append((conn, request))
        self.at.append(asyncio.get_running_loop().time())
        self.answers[conn] = asyncio.get_running_loop().create_future()

    def answered(self, conn: str) -> asyncio.Future[None] | None:
        answer = self.answers.get(conn)
        return None if answer is None or answer.done() else answer

    def ack(self, conn: str) -> None:
        self.answers[conn].set_result(None)

    def pushed(self, conn: str) -> list[PushRequest]:
        return [request for to, request in self.seen if to == conn]


async def until(condition: object, timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.001)


async def test_the_next_push_waits_for_the_answer_and_merges_what_came_meanwhile() -> None:
    queue: PushQueue[str] = PushQueue()
    proxies = Proxies()
    workers = PushWorkers(queue, proxies.push, throttle=1, answered=proxies.answered)
    task = asyncio.create_task(workers.run())
    queue.enqueue("a", push(1))
    await until(lambda: len(proxies.pushed("a")) == 1)
    queue.enqueue("a", push(2))
    queue.enqueue("b", push(3))
    queue.enqueue("a", push(4))
    # the one slot is free once a's push is written: b is pushed while a waits
    await until(lambda: len(proxies.pushed("b")) == 1)
    await asyncio.sleep(0.02)
    assert len(proxies.pushed("a")) == 1, "pushed again before the proxy answered"
    assert queue.is_in_flight("a") and workers.running() == 0
    proxies.ack("a")
    await until(lambda: len(proxies.pushed("a")) == 2)
    assert proxies.pushed("a")[1].configs_updated == push(2).merge(push(4)).configs_updated
    queue.shutdown()
    await asyncio.wait_for(task, timeout=2)
    assert workers.stats.pushes == 3


async def test_a_proxy_that_never_answers_is_pushed_again_after_the_wait() -> None:
    queue: PushQueue[str] = PushQueue()
    proxies = Proxies()
    workers = PushWorkers(queue, proxies.push, answered=proxies.answered, answer_wait=0.05)
    task = asyncio.create_task(workers.run())
    queue.enqueue("a", push(1))
    await until(lambda: len(proxies.pushed("a")) == 1)
    queue.enqueue("a", push(2))
    await until(lambda: len(proxies.pushed("a")) == 2)
    # timed from the first push itself (when the wait starts), not from when this test
    # saw it: a loaded machine's polling delay is not the workers' wait
    first, second = proxies.at
    assert second - first >= 0.05 - 0.005, "pushed again before the answer wait passed"
    queue.shutdown()
    await asyncio.wait_for(task, timeout=2)


async def test_a_connection_with_nothing_unanswered_is_pushed_again_at_once() -> None:
    queue: PushQueue[str] = PushQueue()
    seen: list[str] = []
    workers = PushWorkers(
        queue, lambda conn, request: seen.append(conn), answered=lambda conn: None
    )
    task = asyncio.create_task(workers.run())
    queue.enqueue("a", push(1))
    await until(lambda: len(seen) == 1)
    queue.enqueue("a", push(2))
    await until(lambda: len(seen) == 2)
    assert not queue.is_in_flight("a")
    queue.shutdown()
    await asyncio.wait_for(task, timeout=2)


async def test_shutdown_does_not_wait_for_answers() -> None:
    queue: PushQueue[str] = PushQueue()
    proxies = Proxies()
    workers = PushWorkers(queue, proxies.push, answered=proxies.answered, answer_wait=60.0)
    task = asyncio.create_task(workers.run())
    queue.enqueue("a", push(1))
    await until(lambda: len(proxies.pushed("a")) == 1)
    queue.shutdown()
    await asyncio.wait_for(task, timeout=2)
