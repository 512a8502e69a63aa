"""A fleet of 200 simulated proxies against the fake ADS server (which stands in for
pilothouse's own xDS server, landing separately): shared channels, namespaces,
convergence times, and a push measured from the moment it was made."""

from __future__ import annotations

import time

import pytest
from google.protobuf import json_format

from pilothouse.loadtest import ProxyFleet, fleet_identities, holding_versions, settled
from pilothouse.protocol.type_urls import EDS

from .conftest import eventually
from .fake_ads import FakeAdsServer, content_version
from .mesh_fixtures import EDS_CLUSTERS, REVIEWS, endpoints

NAMESPACES = ("default", "shop", "billing", "auth")


async def test_fleet_of_200_converges_over_shared_channels(ads_server: FakeAdsServer) -> None:
    identities = fleet_identities(200, namespaces=NAMESPACES)
    async with ProxyFleet(ads_server.target, identities, streams_per_channel=50, seed=7) as fleet:
        report = await fleet.wait_converged(timeout=20)
        assert report.converged, f"not converged: {report.unconverged[:5]}"
        assert len(report.durations) == 200
        assert 0 < report.p50 <= report.p90 <= report.p99 <= max(report.durations)
        assert report.summary().count == 200
        assert len(fleet.channels) == 4
        for proxy in fleet.proxies:
            assert set(proxy.holds(EDS)) == set(EDS_CLUSTERS)

        ads = ads_server.ads
        await eventually(lambda: len(ads.requests) == 200 * 8)
        first = [entry for entry in ads.requests if entry.message.HasField("node")]
        assert len({entry.message.node.id for entry in first}) == 200
        spread = {
            json_format.MessageToDict(entry.message.node.metadata)["NAMESPACE"] for entry in first
        }
        assert spread == set(NAMESPACES)
        # 200 streams over 4 HTTP/2 connections, 50 each.
        peers = {entry.peer for entry in first}
        assert len(peers) == 4
        # One shared reader: each distinct cluster and listener was decoded once, not 200 times.
        (reader,) = fleet.readers.values()
        assert reader.decodes <= 7

        moved = endpoints(REVIEWS, "10.2.0.1")
        pushed_at = time.monotonic()
        ads_server.update({EDS: {REVIEWS: moved}})
        push = await fleet.wait_converged(holding_versions(EDS, {REVIEWS: "v2"}), 10, pushed_at)
        assert push.converged
        assert all(0 <= duration < 10 for duration in push.durations)
        assert all(
            proxy.holds(EDS)[REVIEWS].body == moved.SerializeToString() for proxy in fleet.proxies
        )
    assert ads.stream_count == 0


async def test_delta_fleet_ramps_up_and_converges(ads_server: FakeAdsServer) -> None:
    identities = fleet_identities(50, namespaces=NAMESPACES)
    fleet = ProxyFleet(ads_server.target, identities, delta=True, streams_per_channel=20)
    try:
        await fleet.start(ramp=0.2)
        starts = [proxy.started_at or 0.0 for proxy in fleet.proxies]
        assert max(starts) - min(starts) >= 0.15
        report = await fleet.wait_converged(timeout=10)
        assert report.converged
        moved = endpoints(REVIEWS, "10.2.0.2")
        version = content_version(moved.SerializeToString())
        ads_server.update({EDS: {REVIEWS: moved}})
        push = await fleet.wait_converged(holding_versions(EDS, {REVIEWS: version}), 10)
        assert push.converged
        assert len(fleet.channels) == 3
    finally:
        await fleet.close()


async def test_unreachable_server_reports_unconverged() -> None:
    identities = fleet_identities(3)
    async with ProxyFleet("127.0.0.1:1", identities) as fleet:
        with pytest.raises(TimeoutError):
            await fleet.proxies[0].wait_for(settled, 0.05)
        report = await fleet.wait_converged(timeout=0.3)
    assert not report.converged
    assert set(report.unconverged) == {identity.node_id for identity in identities}
    assert report.durations == ()
    assert all(proxy.stream_errors for proxy in fleet.proxies)
