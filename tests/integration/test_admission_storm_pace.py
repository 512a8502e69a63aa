"""A storm of real grpc.aio clients against a real xDS server with admission control on:
held streams are let in at the rate, so the storm converges in about proxies ÷ rate
with no refusal; a stream beyond the wait is refused with the standard
``grpc-retry-pushback-ms`` trailer, and the load generator comes back when told
instead of backing off further.

The clients are the load generator's simulated proxies (grpc.aio streams behaving as
Envoy, wildcard CDS then EDS, LDS, RDS and ACKs), on loopback, against the in-process
server of :class:`~tests.e2e.harness.control_plane.ControlPlane`.
"""

from __future__ import annotations

import asyncio
import logging
import time

import grpc
import pytest

from pilothouse.backoff import Backoff
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS
from pilothouse.settings import AdmissionSettings, XdsSettings
from pilothouse.xds.server.admission import PUSHBACK_TRAILER
from tests.e2e.harness.control_plane import FAST, ControlPlane
from tests.integration.test_xds_server import MESH, open_stream, request

PROXIES = 200
RATE = 100
"""New streams a second: the storm needs (200 - burst) ÷ 100 = 1.75 s of admissions."""


async def started(admission: AdmissionSettings) -> ControlPlane:
    plane = ControlPlane(settings=XdsSettings(debounce=FAST.debounce, admission=admission))
    plane.apply_yaml(MESH)
    await plane.start()
    return plane


async def test_a_storm_within_the_wait_converges_at_the_rate_with_no_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every stream is let in within the wait of arriving, or it would be refused: none
    is, so the storm converges at the rate. The pace is read from the server's own
    record of when each token was taken (logged with each admission), not from the
    clients, which share this process's loop and on a loaded machine arrive late."""
    plane = await started(AdmissionSettings(rate=RATE))  # the default burst and wait
    fleet = ProxyFleet(
        f"127.0.0.1:{plane.port}",
        fleet_identities(PROXIES, namespaces=("data",)),
        streams_per_channel=50,
    )
    try:
        with caplog.at_level(logging.DEBUG, logger="pilothouse.xds.admission"):
            began = time.monotonic()
            await fleet.start()
            report = await fleet.wait_converged(timeout=30)  # bounds a failure only
            took = time.monotonic() - began
        assert report.converged, report.stalls
        assert took >= (PROXIES - AdmissionSettings.burst) / RATE * 0.95  # paced, not flooded
        assert all(proxy.streams_opened == 1 for proxy in fleet.proxies)
        assert sum(proxy.stream_failures for proxy in fleet.proxies) == 0
        assert plane.discovery is not None
        counts = plane.discovery.admission.snapshot()
        assert counts.admitted == PROXIES
        assert sum(counts.rejected.values()) == 0
        tokens = sorted(
            float(record.__dict__["at"])
            for record in caplog.records
            if record.getMessage() == "xds stream admitted"
        )
        assert len(tokens) == PROXIES
        # the burst at once, then never more than the rate in any second
        assert tokens[-1] - tokens[0] >= (PROXIES - AdmissionSettings.burst) / RATE - 0.01
        for first, start in enumerate(tokens):
            assert sum(1 for at in tokens[first:] if at < start + 1.0) <= RATE
    finally:
        await fleet.close()
        await plane.stop()


async def test_a_refusal_carries_the_pushback_trailer() -> None:
    # one token, then one every two seconds, and a line of one second: the second
    # stream's turn is two seconds away, come back when it is half a second away
    plane = await started(AdmissionSettings(rate=0.5, burst=1, wait=1.0))
    channel, first = await open_stream(plane.port)
    refused_channel, refused = await open_stream(plane.port)
    try:
        began = time.monotonic()
        await first.write(request(CDS))
        await asyncio.wait_for(first.read(), 5)
        await refused.write(request(CDS))
        code = await asyncio.wait_for(refused.code(), 5)
        gone = time.monotonic() - began  # the first token was taken after `began`
        assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
        hint = int(dict(await refused.trailing_metadata())[PUSHBACK_TRAILER])
        assert 1500 - gone * 1000 - 1 <= hint <= 1500  # 2 s - 0.5 s, less the time gone
        assert f"come back in {hint / 1000:.3f} s" in (await refused.details())
    finally:
        await channel.close()
        await refused_channel.close()
        await plane.stop()


async def test_the_load_generator_comes_back_when_told_and_its_backoff_does_not_grow() -> None:
    plane = await started(AdmissionSettings(rate=2, burst=1, wait=0))
    holder_node, refused_node = fleet_identities(2, namespaces=("data",))
    target = f"127.0.0.1:{plane.port}"
    slow = Backoff.envoy(initial=5.0, maximum=30.0)
    """A backoff whose shortest wait is longer than the test: only the hint can bring
    the refused proxy back in time."""
    holder = SimulatedProxy(holder_node, target=target)
    refused = SimulatedProxy(refused_node, target=target, backoff=slow)
    try:
        holder.start()
        await holder.wait_for(SimulatedProxy.settled, 10)
        began = time.monotonic()
        refused.start()
        await refused.wait_for(SimulatedProxy.settled, 3)
        assert time.monotonic() - began < 2.5
        assert refused.streams_opened >= 2
        assert list(refused.retries) == []  # no backoff step taken
        assert all(0 < wait <= 0.5 for wait in refused.pushbacks)  # a token every 0.5 s
    finally:
        await holder.close()
        await refused.close()
        await plane.stop()
