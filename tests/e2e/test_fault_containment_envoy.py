"""A real Envoy keeps getting pushes while pilothouse fails another proxy's stream.

The other proxy is a raw grpc.aio ADS client whose CDS generation raises (the real
generator wrapped to raise for its node: a correct generator cannot be made to fail).
Its stream ends with INTERNAL, once on its own request and once more in a push; the
Envoy's stream is never dropped, and both an endpoint-only change (the EDS fast path)
and a new service (a full push) reach it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from pilothouse.bootstrap.envoy import XdsTransport
from pilothouse.protocol.type_urls import CDS
from pilothouse.xds.server.connection import INTERNAL_ERROR
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.test_xds_envoy import (
    CLUSTER,
    MESH,
    TRANSPORTS,
    attach,
    endpoints_of,
    eventually,
    workload,
)
from tests.integration.ads_stream import cluster_names, delta_request, open_ads, sotw_request
from tests.integration.test_xds_stream_faults import FailingFor

DOOMED = "sidecar~10.0.0.2~doomed-1.shop~shop.svc.cluster.local"
ECHO = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo, namespace: shop}
spec:
  hosts: [echo.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 9000, name: http, protocol: HTTP}]
  endpoints: [{address: 127.0.0.1, ports: {http: 19000}}]
"""
ECHO_CLUSTER = "outbound|9000||echo.shop.svc.cluster.local"


@pytest.fixture
async def plane() -> AsyncIterator[ControlPlane]:
    control_plane = ControlPlane()
    control_plane.apply_yaml(MESH + "---\n" + workload(18001))
    await control_plane.start()
    try:
        yield control_plane
    finally:
        await control_plane.stop()


async def doomed_stream_ends_internal(
    plane: ControlPlane, delta: bool, failing: FailingFor
) -> None:
    """Open the doomed proxy's stream; it ends with INTERNAL on its own request, or (if
    the generator is disarmed at first) after the next push."""
    stream = await open_ads(plane.port, delta=delta)
    try:
        await stream.send(delta_request(CDS, DOOMED) if delta else sotw_request(CDS, DOOMED))
        if not failing.armed:
            assert CLUSTER in cluster_names(await stream.read())
            failing.armed = True
            plane.apply_yaml(MESH.replace("subsets: [{name: v1", "subsets: [{name: v9"))
        code, details = await stream.status(timeout=10)
        assert code is grpc.StatusCode.INTERNAL and details == INTERNAL_ERROR
    finally:
        await stream.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_envoy_keeps_its_pushes_while_another_stream_fails(
    plane: ControlPlane, envoy_factory: EnvoyFleet, transport: XdsTransport
) -> None:
    envoy = await attach(envoy_factory, plane.port, transport)
    assert await endpoints_of(envoy, CLUSTER) == [("127.0.0.1", 18001)]
    (envoy_connection,) = plane.connections()
    assert plane.discovery is not None
    inner = plane.discovery.generator(CDS)
    assert inner is not None
    failing = FailingFor(inner, DOOMED)
    plane.discovery.register_generator(failing)
    delta = transport is XdsTransport.DELTA

    await doomed_stream_ends_internal(plane, delta, failing)  # on its own request
    failing.armed = False
    await doomed_stream_ends_internal(plane, delta, failing)  # in a push
    assert plane.discovery.stats.push_failures >= 1

    plane.apply_yaml(workload(18002))  # endpoint-only: the EDS fast path
    await eventually(lambda: _endpoints_are(envoy, [("127.0.0.1", 18002)]), 10)
    plane.apply_yaml(ECHO)  # a new service: a full push
    await eventually(lambda: _has_cluster(envoy, ECHO_CLUSTER), 10)
    assert plane.connections() == [envoy_connection]  # Envoy's stream never dropped
    assert await envoy.stat("control_plane.connected_state") == 1
    task = plane._task
    assert task is not None and not task.done()


async def _endpoints_are(envoy: EnvoyProcess, expected: list[tuple[str, int]]) -> bool:
    return await endpoints_of(envoy, CLUSTER) == expected


async def _has_cluster(envoy: EnvoyProcess, name: str) -> bool:
    statuses = (await envoy.clusters_json()).get("cluster_statuses", [])
    return any(status["name"] == name for status in statuses)
