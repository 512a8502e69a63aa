"""A simulated proxy refused by admission control backs off as Envoy does: each refusal
(RESOURCE_EXHAUSTED from the rate limit, UNAVAILABLE from the connection limit) grows
its jittered wait, and a stream that delivered responses starts it again from the
first step when it ends (as at the server's maximum connection age). The proxies here
ignore the server's pushback hint, as Envoy does (``pushback=False``)."""

from __future__ import annotations

import asyncio

from pilothouse.backoff import Backoff
from pilothouse.loadtest.fleet import fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.settings import AdmissionSettings, XdsSettings
from tests.e2e.harness.control_plane import FAST, ControlPlane
from tests.integration.test_xds_server import MESH

BACKOFF = Backoff.envoy(initial=0.02, maximum=0.3)
"""Envoy's shape (0.5 s to 30 s) scaled down: ceilings 0.02, 0.06, 0.14, 0.3, 0.3 ..."""


async def until(condition: object, timeout: float = 10.0) -> None:
    assert callable(condition)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def within_backoff(retries: list[tuple[int, float]]) -> bool:
    return all(0 <= delay <= BACKOFF.ceiling(failures) for failures, delay in retries)


async def test_refusals_grow_the_wait_and_a_served_stream_resets_it() -> None:
    plane = ControlPlane(
        settings=XdsSettings(
            debounce=FAST.debounce,
            # one token, then none for a thousand seconds; nobody waits for a turn
            admission=AdmissionSettings(rate=0.001, burst=1, wait=0),
        )
    )
    plane.apply_yaml(MESH)
    await plane.start()
    first, second = fleet_identities(2, namespaces=("data",))
    target = f"127.0.0.1:{plane.port}"
    holder = SimulatedProxy(first, target=target, backoff=BACKOFF, pushback=False)
    refused = SimulatedProxy(second, target=target, backoff=BACKOFF, pushback=False)
    try:
        holder.start()
        await holder.wait_for(SimulatedProxy.settled, 10)
        refused.start()
        await until(lambda: refused.streams_opened >= 5)
        rate_limited = list(refused.retries)
        assert [failures for failures, _ in rate_limited[:4]] == [1, 2, 3, 4]
        assert within_backoff(rate_limited)
        assert any("RESOURCE_EXHAUSTED" in error for error in refused.stream_errors)

        assert plane.discovery is not None
        admission = plane.discovery.admission
        admission.configure(rate=0, max_connections=1)  # now the connection limit refuses
        seen = refused.streams_opened
        await until(lambda: refused.streams_opened >= seen + 3)
        # the proxy counts a stream when it opens it; the last one may not have reached
        # admission yet, and must be refused before the limit is lifted below
        await until(lambda: admission.snapshot().rejected["max_connections"] >= 3)
        assert refused.stream_errors[-1].startswith("UNAVAILABLE")
        assert "circuit breaker" in refused.stream_errors[-1]
        failures = [count for count, _ in refused.retries]
        assert failures == sorted(failures) and failures[-1] >= 7  # still growing
        assert within_backoff(list(refused.retries))
        assert refused.retries[-1][1] <= BACKOFF.maximum

        admission.configure(max_connections=0)
        await refused.wait_for(SimulatedProxy.settled, 10)
        counts = admission.snapshot()
        assert counts.rejected["rate_limited"] >= 4 and counts.rejected["max_connections"] >= 3

        # the server ends the served stream (as a GOAWAY at the maximum age would): the
        # proxy waits only the first step, then is back and holds its config again
        opened = refused.streams_opened
        for connection in plane.connections():
            if connection.proxy.node_id == second.node_id:
                connection.close()
        await until(lambda: refused.streams_opened > opened)
        assert refused.retries[-1][0] == 1
        assert refused.retries[-1][1] <= BACKOFF.ceiling(1)
        await until(lambda: refused.connected)
        await refused.wait_for(SimulatedProxy.settled, 10)
    finally:
        await refused.close()
        await holder.close()
        await plane.stop()
