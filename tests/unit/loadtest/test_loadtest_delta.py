"""A delta simulated Envoy against the fake ADS server (which stands in for pilothouse's own
xDS server, landing separately), over real grpc.aio on 127.0.0.1.

Checks Envoy's delta behaviour from reference §5: legacy-wildcard first
requests, nonce-only ACKs, subscribe/unsubscribe with an empty nonce when
clusters and listeners come and go, NACKs, and a restart where the proxy
reports ``initial_resource_versions`` and the server resends nothing unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pilothouse.loadtest import (
    ReceivedResource,
    SimulatedProxy,
    holding_exactly,
    holding_versions,
    mesh_identity,
    settled,
)
from pilothouse.loadtest.identity import ProxyFlavour
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

from .conftest import FAST_BACKOFF, FAST_CHANNEL, eventually
from .fake_ads import FakeAdsServer, content_version
from .mesh_fixtures import (
    BLACKHOLE,
    DETAILS,
    EDS_CLUSTERS,
    PRODUCTPAGE,
    RATINGS,
    REVIEWS,
    eds_cluster,
    endpoints,
    sidecar_mesh,
)

SIDECAR = mesh_identity(ProxyFlavour.SIDECAR, "10.0.0.2", "ratings-v1-xyz", "default")


@pytest.fixture
async def proxy(ads_server: FakeAdsServer) -> AsyncIterator[SimulatedProxy]:
    async with SimulatedProxy(
        SIDECAR,
        target=ads_server.target,
        delta=True,
        backoff=FAST_BACKOFF,
        channel_options=FAST_CHANNEL,
    ) as started:
        await started.wait_for(settled, 5)
        # The handshake is 4 requests plus 4 ACKs; let the last ACK reach the server.
        await eventually(lambda: len(ads_server.ads.requests) == 8)
        yield started


def shape(request: Any) -> tuple[str, list[str], list[str], str, bool]:
    """(type, subscribe, unsubscribe, nonce, carries node) of a delta request."""
    return (
        request.type_url.rsplit(".", 1)[-1],
        list(request.resource_names_subscribe),
        list(request.resource_names_unsubscribe),
        request.response_nonce,
        request.HasField("node"),
    )


async def test_reaches_full_state_with_nonce_only_acks(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    ads = ads_server.ads
    await eventually(lambda: len(ads.requests) == 8)
    n = [entry.message.nonce for entry in ads.sent]
    eds_names = sorted(EDS_CLUSTERS)
    assert [shape(entry.message) for entry in ads.requests] == [
        ("Cluster", [], [], "", True),
        ("ClusterLoadAssignment", eds_names, [], "", False),
        ("Cluster", [], [], n[0], False),
        ("Listener", [], [], "", False),
        ("ClusterLoadAssignment", [], [], n[1], False),
        ("RouteConfiguration", ["8080", "9080"], [], "", False),
        ("Listener", [], [], n[2], False),
        ("RouteConfiguration", [], [], n[3], False),
    ]
    for entry in ads.requests:
        assert not entry.message.HasField("error_detail")
        assert dict(entry.message.initial_resource_versions) == {}
    assert set(proxy.holds(EDS)) == set(EDS_CLUSTERS)
    assert set(proxy.holds(RDS)) == {"8080", "9080"}
    reviews = proxy.holds(CDS)[REVIEWS]
    assert reviews.version == content_version(ads.bodies[CDS][REVIEWS])
    assert reviews.refs == (REVIEWS,)
    assert proxy.holds(CDS)[BLACKHOLE].refs == ()


async def test_push_subscribes_and_unsubscribes(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    ads = ads_server.ads
    before = len(ads.requests)
    ads_server.update({CDS: {DETAILS: eds_cluster(DETAILS), RATINGS: None}})
    await proxy.wait_for(holding_exactly(EDS, {REVIEWS, PRODUCTPAGE, DETAILS}), 5)
    await eventually(lambda: len(ads.requests) >= before + 3)
    later = [shape(entry.message) for entry in ads.requests[before:]]
    cds_push, eds_answer = (entry.message.nonce for entry in ads.sent[-2:])
    assert later[:3] == [
        ("ClusterLoadAssignment", [DETAILS], [RATINGS], "", False),
        ("Cluster", [], [], cds_push, False),
        ("ClusterLoadAssignment", [], [], eds_answer, False),
    ]
    assert proxy.subscription(EDS).names == {REVIEWS, PRODUCTPAGE, DETAILS}
    assert RATINGS not in proxy.holds(CDS)

    ads_server.update({LDS: {"0.0.0.0_8080": None}})
    await proxy.wait_for(holding_exactly(RDS, {"9080"}), 5)
    await eventually(lambda: list(ads.requests_of(RDS)[-1].resource_names_unsubscribe) == ["8080"])
    assert "0.0.0.0_8080" not in proxy.holds(LDS)
    assert proxy.events[-1].type_url == LDS
    assert proxy.events[-1].removed == ("0.0.0.0_8080",)


async def test_endpoint_push_updates_version(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    moved = endpoints(REVIEWS, "10.1.0.7")
    ads_server.update({EDS: {REVIEWS: moved}})
    version = content_version(moved.SerializeToString())
    await proxy.wait_for(holding_versions(EDS, {REVIEWS: version}), 5)
    assert proxy.holds(EDS)[REVIEWS].body == moved.SerializeToString()
    assert proxy.counters(EDS).responses == 2


async def test_nack_carries_nonce_and_error_only(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    def reject(type_url: str, resource: ReceivedResource) -> str | None:
        return "bad endpoints" if type_url == EDS and resource.name == REVIEWS else None

    proxy.reject = reject
    good = proxy.holds(EDS)[REVIEWS]
    ads_server.update({EDS: {REVIEWS: endpoints(REVIEWS, "10.9.9.9")}})
    await proxy.wait_for(lambda p: p.counters(EDS).nacks == 1, 5)
    ads = ads_server.ads
    await eventually(lambda: ads.requests_of(EDS)[-1].HasField("error_detail"))
    nack = ads.requests_of(EDS)[-1]
    assert nack.response_nonce == ads.sent_of(EDS)[-1].nonce
    assert nack.error_detail.message == "bad endpoints"
    assert nack.error_detail.code == 13
    assert list(nack.resource_names_subscribe) == []
    assert proxy.holds(EDS)[REVIEWS] == good


async def test_restart_resyncs_without_resending_unchanged(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    held = {t: {n: r.version for n, r in proxy.holds(t).items()} for t in (CDS, EDS, LDS, RDS)}
    fresh = await ads_server.restart()
    await eventually(lambda: len(fresh.requests) >= 4 and len(fresh.sent) >= 4)
    first = [entry.message for entry in fresh.requests[:4]]
    assert [shape(request) for request in first] == [
        ("Cluster", [], [], "", True),
        ("ClusterLoadAssignment", sorted(EDS_CLUSTERS), [], "", False),
        ("Listener", [], [], "", False),
        ("RouteConfiguration", ["8080", "9080"], [], "", False),
    ]
    for request, type_url in zip(first, (CDS, EDS, LDS, RDS), strict=True):
        assert dict(request.initial_resource_versions) == held[type_url]
    # Nothing changed while the server was away: every answer is empty.
    assert all(len(entry.message.resources) == 0 for entry in fresh.sent)
    await proxy.wait_for(lambda p: p.counters(RDS).responses == 2, 5)
    assert {n: r.version for n, r in proxy.holds(CDS).items()} == held[CDS]
    assert proxy.settled()


async def test_restart_with_changes_sends_only_the_difference(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    changed = sidecar_mesh()
    changed[EDS][REVIEWS] = endpoints(REVIEWS, "10.1.0.42")
    del changed[LDS]["0.0.0.0_3306"]
    fresh = await ads_server.restart(changed)
    await proxy.wait_for(lambda p: "0.0.0.0_3306" not in p.holds(LDS), 5)
    await proxy.wait_for(
        holding_versions(
            EDS, {REVIEWS: content_version(changed[EDS][REVIEWS].SerializeToString())}
        ),
        5,
    )
    sent = {entry.message.type_url: entry.message for entry in fresh.sent}
    assert [r.name for r in sent[EDS].resources] == [REVIEWS]
    assert list(sent[LDS].removed_resources) == ["0.0.0.0_3306"]
    assert list(sent[LDS].resources) == []
    assert list(sent[CDS].resources) == []
