"""A connection's timed push steps (warming give-up, lingering release) are contained:
one that raises ends only that connection, with INTERNAL, never the event loop."""

from __future__ import annotations

import asyncio

from pilothouse.xds.server.connection import INTERNAL_ERROR
from tests.unit.xds_server.test_connection_push import converged


async def test_a_raising_timed_step_fails_only_its_connection() -> None:
    broken, _ = converged()
    healthy, _ = converged()
    loop = asyncio.get_running_loop()
    unhandled: list[object] = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    ran: list[float] = []

    def step(now: float) -> None:
        raise RuntimeError("builder bug")

    broken._after(0.0, step)
    healthy._after(0.0, ran.append)
    await asyncio.sleep(0.01)
    assert broken.failure == INTERNAL_ERROR
    assert broken.outbound.get_nowait() is None  # the writer ends the stream
    assert healthy.failure is None and healthy.outbound.empty() and len(ran) == 1
    assert unhandled == []


async def test_a_failed_connection_runs_no_more_timed_steps() -> None:
    connection, _ = converged()
    connection.fail("first reason")
    connection.fail("second reason")
    ran: list[float] = []
    connection._after(0.0, ran.append)
    await asyncio.sleep(0.01)
    assert ran == [] and connection.failure == "first reason"
