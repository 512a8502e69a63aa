"""A ProxyConfig change reaches MCP-over-xDS clients and no proxy.

The server is pilothouse's real DiscoveryServer over gRPC; the proxies are the loadtest
package's simulated Envoys (SotW and delta) in the changed namespace and in the root
namespace, the MCP client an istiod-like ADS stream. ProxyConfig is applied in
bootstraps, so a change must push nothing to proxies (no connection queued, no response
of any type) while the MCP client gets the kind's new state.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from pilothouse.api.istio.networking.v1beta1 import proxy_config_pb2
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from tests.e2e.harness.control_plane import ControlPlane
from tests.integration.push_settled import quiet
from tests.integration.test_mcp_over_xds_server import IstiodLikeClient, unwrap

NAMESPACES = ("shop", "istio-system")
PROXY_CONFIG_TYPE = "networking.istio.io/v1beta1/ProxyConfig"

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: shop}
spec:
  hosts: [httpbin.shop.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 8000, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.7}]
"""


def proxy_config(namespace: str, concurrency: int) -> str:
    return f"""\
apiVersion: networking.istio.io/v1beta1
kind: ProxyConfig
metadata: {{name: threads, namespace: {namespace}}}
spec: {{concurrency: {concurrency}, environmentVariables: {{ISTIO_META_A: b}}}}
"""


@pytest.fixture
async def plane() -> AsyncIterator[tuple[ControlPlane, list[SimulatedProxy]]]:
    control_plane = ControlPlane()
    control_plane.apply_yaml(MESH)
    await control_plane.start()
    target = f"127.0.0.1:{control_plane.port}"
    sotw = ProxyFleet(target, fleet_identities(6, namespaces=NAMESPACES))
    delta = ProxyFleet(target, fleet_identities(6, namespaces=NAMESPACES, app="d"), delta=True)
    try:
        for group in (sotw, delta):
            await group.start()
            report = await group.wait_converged(timeout=30)
            assert report.converged, report.unconverged[:5]
        yield control_plane, [*sotw.proxies, *delta.proxies]
    finally:
        await sotw.close()
        await delta.close()
        await control_plane.stop()


def responses(proxies: list[SimulatedProxy]) -> dict[tuple[str, str], int]:
    return {
        (p.node_id, type_url): p.counters(type_url).responses
        for p in proxies
        for type_url in (CDS, EDS, LDS, RDS)
    }


async def test_a_change_reaches_mcp_clients_and_no_proxy(
    plane: tuple[ControlPlane, list[SimulatedProxy]],
) -> None:
    control_plane, proxies = plane
    discovery = control_plane.discovery
    assert discovery is not None
    client = IstiodLikeClient(control_plane.port)
    try:
        answered = await client.istiod_handshake((PROXY_CONFIG_TYPE,))
        assert list(unwrap(answered[PROXY_CONFIG_TYPE])) == []
        await quiet(control_plane, nodes={p.node_id for p in proxies})
        before = responses(proxies)
        queued = discovery.stats.connections_queued
        for namespace, concurrency in (("shop", 2), ("istio-system", 4), ("shop", 3)):
            control_plane.apply_yaml(proxy_config(namespace, concurrency))
            pushed = await client.next()
            assert pushed.type_url == PROXY_CONFIG_TYPE
            served = unwrap(pushed)[f"{namespace}/threads"]
            spec = proxy_config_pb2.ProxyConfig.FromString(served.body.value)
            assert spec.concurrency.value == concurrency
            await client.ack(pushed)
        control_plane.delete("ProxyConfig", "shop", "threads")
        pushed = await client.next()
        assert list(unwrap(pushed)) == ["istio-system/threads"]
        await client.ack(pushed)
        # any push the changes caused has landed (on the proxies: the MCP client is read above)
        await quiet(control_plane, nodes={p.node_id for p in proxies})
        assert responses(proxies) == before
        # only the MCP client's connection was queued, once per change
        assert discovery.stats.connections_queued - queued <= 4
    finally:
        await client.close()
