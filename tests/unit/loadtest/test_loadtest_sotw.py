"""A SotW simulated Envoy against the fake ADS server (which stands in for pilothouse's own
xDS server, landing separately), over real grpc.aio on 127.0.0.1.

Checks the request order of Envoy 1.40 (reference §5), the fields of every ACK
and NACK as the server recorded them, following pushes that add and remove
clusters and listeners, and the re-sync after the server restarts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf import json_format

from pilothouse.loadtest import (
    HeldResource,
    ProxyFlavour,
    ReceivedResource,
    SimulatedProxy,
    holding_exactly,
    mesh_identity,
    settled,
)
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

from .conftest import FAST_BACKOFF, FAST_CHANNEL, eventually
from .fake_ads import FakeAds, FakeAdsServer, Recorded
from .mesh_fixtures import (
    BLACKHOLE,
    DETAILS,
    EDS_CLUSTERS,
    PRODUCTPAGE,
    RATINGS,
    REVIEWS,
    eds_cluster,
    endpoints,
)

SIDECAR = mesh_identity(ProxyFlavour.SIDECAR, "10.0.0.1", "reviews-v1-abc", "default")


@pytest.fixture
async def proxy(ads_server: FakeAdsServer) -> AsyncIterator[SimulatedProxy]:
    async with SimulatedProxy(
        SIDECAR, target=ads_server.target, backoff=FAST_BACKOFF, channel_options=FAST_CHANNEL
    ) as started:
        await started.wait_for(settled, 5)
        # The handshake is 4 requests plus 4 ACKs; let the last ACK reach the server.
        await eventually(lambda: len(ads_server.ads.requests) == 8)
        yield started


def shape(request: Any) -> tuple[str, list[str], str, str, bool]:
    """(type, names, version_info, nonce, carries node) of a SotW request."""
    short = request.type_url.rsplit(".", 1)[-1]
    return (
        short,
        list(request.resource_names),
        request.version_info,
        request.response_nonce,
        request.HasField("node"),
    )


def nonces(sent: list[Recorded]) -> list[str]:
    return [entry.message.nonce for entry in sent]


async def test_reaches_full_state_in_envoy_order(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    ads = ads_server.ads
    await eventually(lambda: len(ads.requests) == 8)
    eds_names = sorted(EDS_CLUSTERS)
    routes = ["8080", "9080"]
    n = nonces(ads.sent)
    assert [shape(entry.message) for entry in ads.requests] == [
        ("Cluster", [], "", "", True),
        ("ClusterLoadAssignment", eds_names, "", "", False),
        ("Cluster", [], "v1", n[0], False),
        ("Listener", [], "", "", False),
        ("ClusterLoadAssignment", eds_names, "v1", n[1], False),
        ("RouteConfiguration", routes, "", "", False),
        ("Listener", [], "v1", n[2], False),
        ("RouteConfiguration", routes, "v1", n[3], False),
    ]
    assert set(proxy.holds(CDS)) == {*EDS_CLUSTERS, BLACKHOLE}
    # Only EDS clusters are followed, by their service name; DETAILS exists but is not asked for.
    assert set(proxy.holds(EDS)) == set(EDS_CLUSTERS)
    assert set(proxy.holds(LDS)) == {"0.0.0.0_9080", "0.0.0.0_8080", "0.0.0.0_3306"}
    assert set(proxy.holds(RDS)) == set(routes)
    for type_url in (CDS, EDS, LDS, RDS):
        counters = proxy.counters(type_url)
        assert (counters.responses, counters.acks, counters.nacks) == (1, 1, 0)
        assert counters.bytes_received > 0
        assert proxy.last_response_time(type_url) is not None
    held = proxy.holds(RDS)["9080"]
    assert held == HeldResource("9080", "v1", ads.bodies[RDS]["9080"], ())


async def test_node_only_on_first_request(proxy: SimulatedProxy, ads_server: FakeAdsServer) -> None:
    first = ads_server.ads.requests[0].message
    assert first.node.id == "sidecar~10.0.0.1~reviews-v1-abc.default~default.svc.cluster.local"
    assert first.node.cluster == "reviews-v1.default"
    assert first.node.user_agent_name == "envoy"
    assert first.node.user_agent_build_version.version.minor_number == 40
    metadata = json_format.MessageToDict(first.node.metadata)
    assert metadata["NAMESPACE"] == "default"
    assert metadata["LABELS"] == {"app": "reviews-v1"}
    assert not any(entry.message.HasField("node") for entry in ads_server.ads.requests[1:])


async def test_router_flavour_differs_only_in_node_type(ads_server: FakeAdsServer) -> None:
    gateway = mesh_identity(ProxyFlavour.ROUTER, "10.0.0.9", "ingress-1", "istio-system")
    async with SimulatedProxy(gateway, target=ads_server.target) as router:
        await router.wait_for(settled, 5)
        assert len(router.holds(RDS)) == 2
    first = ads_server.ads.requests[0].message
    assert first.node.id.startswith("router~10.0.0.9~ingress-1.istio-system~")
    await eventually(lambda: len(ads_server.ads.requests_of(CDS)) == 2)
    assert [list(r.resource_names) for r in ads_server.ads.requests_of(CDS)] == [[], []]


async def test_every_response_is_acked_with_its_version(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    ads_server.update({EDS: {REVIEWS: endpoints(REVIEWS, "10.1.0.9")}})
    await proxy.wait_for(lambda p: p.holds(EDS)[REVIEWS].version == "v2", 5)
    ads = ads_server.ads
    await eventually(lambda: len(ads.requests) == len(ads.sent) + 4)
    for sent in ads.sent:
        response = sent.message
        answers = [e.message for e in ads.requests if e.message.response_nonce == response.nonce]
        assert len(answers) >= 1, f"response {response.nonce} was not answered"
        ack = answers[-1]
        assert ack.type_url == response.type_url
        assert ack.version_info == response.version_info
        assert not ack.HasField("error_detail")
    last_eds = ads.requests_of(EDS)[-1]
    assert list(last_eds.resource_names) == sorted(EDS_CLUSTERS)
    # Unchanged endpoints keep the version that last changed them.
    assert proxy.holds(EDS)[RATINGS].version == "v1"


async def test_push_adding_and_removing_clusters_re_requests_eds(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    before = len(ads_server.ads.requests)
    ads_server.update({CDS: {DETAILS: eds_cluster(DETAILS), RATINGS: None}})
    wanted = {REVIEWS, PRODUCTPAGE, DETAILS}
    await proxy.wait_for(holding_exactly(EDS, wanted), 5)
    assert set(proxy.holds(CDS)) == {REVIEWS, PRODUCTPAGE, DETAILS, BLACKHOLE}
    # the server records the CDS ACK a moment after the proxy holds the new assignments
    await eventually(
        lambda: any(entry.message.type_url == CDS for entry in ads_server.ads.requests[before:])
    )
    later = [entry.message for entry in ads_server.ads.requests[before:]]
    eds_requests = [request for request in later if request.type_url == EDS]
    # The re-request carries the new name set, the last accepted version and the last EDS nonce.
    assert list(eds_requests[0].resource_names) == sorted(wanted)
    assert eds_requests[0].version_info == "v1"
    assert eds_requests[0].response_nonce == ads_server.ads.sent_of(EDS)[0].nonce
    # ... and is sent before the CDS ACK, as Envoy does.
    assert [r.type_url for r in later[:2]] == [EDS, CDS]
    assert proxy.subscription(EDS).names == frozenset(wanted)


async def test_removed_listener_narrows_rds(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    ads_server.update({LDS: {"0.0.0.0_8080": None}})
    await proxy.wait_for(holding_exactly(RDS, {"9080"}), 5)
    await eventually(lambda: list(ads_server.ads.requests_of(RDS)[-1].resource_names) == ["9080"])
    assert set(proxy.holds(LDS)) == {"0.0.0.0_9080", "0.0.0.0_3306"}


async def test_nack_via_hook_keeps_last_good_config(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    seen: list[ReceivedResource] = []

    def reject(type_url: str, resource: ReceivedResource) -> str | None:
        seen.append(resource)
        return "connect_timeout: bad duration" if resource.name == DETAILS else None

    proxy.reject = reject
    ads_server.update({CDS: {DETAILS: eds_cluster(DETAILS)}})
    await proxy.wait_for(lambda p: p.counters(CDS).nacks == 1, 5)
    ads = ads_server.ads
    await eventually(lambda: ads.requests_of(CDS)[-1].HasField("error_detail"))
    nack = ads.requests_of(CDS)[-1]
    assert nack.HasField("error_detail")
    assert nack.error_detail.code == 13
    assert nack.error_detail.message == "connect_timeout: bad duration"
    assert nack.version_info == "v1"
    assert nack.response_nonce == ads_server.ads.sent_of(CDS)[-1].nonce
    assert DETAILS not in proxy.holds(CDS)
    assert proxy.last_error(CDS) == "connect_timeout: bad duration"
    assert {resource.name for resource in seen} >= {BLACKHOLE, DETAILS}
    assert all(resource.type_url == CDS and resource.version == "v2" for resource in seen)
    assert proxy.events[-1].accepted is False

    proxy.reject = None
    ads_server.update({CDS: {DETAILS: eds_cluster(DETAILS, service_name=DETAILS)}})
    await proxy.wait_for(lambda p: DETAILS in p.holds(EDS), 5)
    assert proxy.last_error(CDS) is None
    await eventually(lambda: ads.requests_of(CDS)[-1].version_info == "v3")


async def test_nack_before_anything_accepted_reports_empty_version(
    ads_server: FakeAdsServer,
) -> None:
    def reject(type_url: str, resource: ReceivedResource) -> str | None:
        return "no routes today" if type_url == RDS else None

    async with SimulatedProxy(SIDECAR, target=ads_server.target, reject=reject) as proxy:
        await proxy.wait_for(lambda p: p.counters(RDS).nacks == 1, 5)
        ads = ads_server.ads
        await eventually(lambda: ads.requests_of(RDS)[-1].HasField("error_detail"))
        nack = ads.requests_of(RDS)[-1]
        assert nack.error_detail.message == "no routes today"
        assert nack.version_info == ""
        assert proxy.holds(RDS) == {}
        assert len(proxy.holds(LDS)) == 3
        assert not proxy.settled()


async def test_reconnect_after_restart_resends_subscriptions(
    proxy: SimulatedProxy, ads_server: FakeAdsServer
) -> None:
    held_before = dict(proxy.holds(CDS))
    fresh: FakeAds = await ads_server.restart()
    await proxy.wait_for(lambda p: p.streams_opened >= 2 and p.connected, 5)
    await proxy.wait_for(lambda p: p.counters(RDS).responses >= 2, 5)
    first_four = [shape(entry.message) for entry in fresh.requests[:4]]
    assert first_four == [
        ("Cluster", [], "v1", "", True),
        ("ClusterLoadAssignment", sorted(EDS_CLUSTERS), "v1", "", False),
        ("Listener", [], "v1", "", False),
        ("RouteConfiguration", ["8080", "9080"], "v1", "", False),
    ]
    assert proxy.stream_errors, "the failed stream is recorded"
    assert proxy.holds(CDS) == held_before
