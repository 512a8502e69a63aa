"""Self-tests of the steady background load (no Envoy): pacing, and failures recorded."""

from __future__ import annotations

import asyncio
import time

from tests.e2e.harness.load import SteadyLoad
from tests.e2e.harness.ports import free_port
from tests.e2e.harness.upstreams import UpstreamPool


async def test_paced_load_keeps_to_its_rate(upstream_factory: UpstreamPool) -> None:
    upstream = await upstream_factory("paced")
    async with SteadyLoad(upstream.port, rate=40, workers=2) as load:
        started = time.monotonic()
        await asyncio.sleep(1.0)
    elapsed = time.monotonic() - started

    # back to back, two workers on loopback would send hundreds in a second
    assert 0.5 * 40 * elapsed <= len(load.samples) <= 40 * elapsed + 2, load.outcomes()
    assert load.outcomes() == {"paced": len(load.samples)}
    assert upstream.requests == len(load.samples)


async def test_refused_requests_are_recorded_as_failures_at_the_rate() -> None:
    async with SteadyLoad(free_port(), rate=20, workers=1) as load:
        await asyncio.sleep(0.5)

    assert load.samples, "no request was attempted"
    assert len(load.failures()) == len(load.samples) <= 0.5 * 20 + 2
    assert all("ConnectionRefusedError" in (s.error or "") for s in load.samples)
