"""The proxyless-gRPC flavour against the fake ADS server (which stands in for pilothouse's
own xDS server, landing separately): grpcio's request order from reference §6.

LDS names the target, then RDS the listener's route, CDS the route's cluster,
EDS the cluster's service name, each response ACKed before the next type is
requested; nothing else of the mesh is fetched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf import json_format

from pilothouse.loadtest import ProxyFlavour, SimulatedProxy, mesh_identity, settled
from pilothouse.loadtest.identity import GRPC_CLIENT_FEATURES
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

from .conftest import eventually
from .fake_ads import FakeAdsServer
from .mesh_fixtures import GRPC_ROUTE, GRPC_TARGET, REVIEWS, grpc_mesh, route

CLIENT = mesh_identity(
    ProxyFlavour.GRPC, "10.0.0.3", "productpage-v1-q", "default", targets=(GRPC_TARGET,)
)


@pytest.fixture
async def grpc_server() -> AsyncIterator[FakeAdsServer]:
    server = FakeAdsServer(grpc_mesh())
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def shape(request: Any) -> tuple[str, list[str], str, str]:
    return (
        request.type_url.rsplit(".", 1)[-1],
        list(request.resource_names),
        request.version_info,
        request.response_nonce,
    )


async def test_grpc_request_order(grpc_server: FakeAdsServer) -> None:
    async with SimulatedProxy(CLIENT, target=grpc_server.target) as client:
        await client.wait_for(settled, 5)
        ads = grpc_server.ads
        await eventually(lambda: len(ads.requests) == 8)
        n = [entry.message.nonce for entry in ads.sent]
        assert [shape(entry.message) for entry in ads.requests] == [
            ("Listener", [GRPC_TARGET], "", ""),
            ("Listener", [GRPC_TARGET], "v1", n[0]),
            ("RouteConfiguration", [GRPC_ROUTE], "", ""),
            ("RouteConfiguration", [GRPC_ROUTE], "v1", n[1]),
            ("Cluster", [REVIEWS], "", ""),
            ("Cluster", [REVIEWS], "v1", n[2]),
            ("ClusterLoadAssignment", [REVIEWS], "", ""),
            ("ClusterLoadAssignment", [REVIEWS], "v1", n[3]),
        ]
        assert set(client.holds(LDS)) == {GRPC_TARGET}
        assert set(client.holds(RDS)) == {GRPC_ROUTE}
        assert set(client.holds(CDS)) == {REVIEWS}
        assert set(client.holds(EDS)) == {REVIEWS}
        node = ads.requests[0].message.node
        assert node.user_agent_name.startswith("gRPC")
        assert tuple(node.client_features) == GRPC_CLIENT_FEATURES
        assert json_format.MessageToDict(node.metadata)["GENERATOR"] == "grpc"
        assert node.id.startswith("sidecar~10.0.0.3~productpage-v1-q.default~")


async def test_grpc_follows_route_to_new_cluster(grpc_server: FakeAdsServer) -> None:
    ratings = "outbound|9080||ratings.default.svc.cluster.local"
    async with SimulatedProxy(CLIENT, target=grpc_server.target) as client:
        await client.wait_for(settled, 5)
        grpc_server.update({RDS: {GRPC_ROUTE: route(GRPC_ROUTE, ratings)}})
        await client.wait_for(lambda c: set(c.holds(EDS)) == {ratings}, 5)
        assert set(client.holds(CDS)) == {ratings}
        assert client.subscription(CDS).names == {ratings}
        assert client.settled()
