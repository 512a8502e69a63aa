"""A real Envoy in REST mode polls pilothouse's admin server for clusters and endpoints.

The bootstrap has no ADS: CDS and LDS are REST-JSON polls through the ``xds-rest``
cluster, and the served EDS clusters must point their ``eds_config`` at REST too, or
Envoy would wait for endpoints on an ADS stream it does not have.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pilothouse.admin.app import REST, build_admin_app
from pilothouse.admin.server import AdminServer
from pilothouse.bootstrap.envoy import (
    XDS_REST_CLUSTER,
    EnvoyBootstrapOptions,
    XdsTransport,
    envoy_bootstrap,
)
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.discovery import DiscoveryServer, XdsSettings
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from pilothouse.xds.server.rest import RestDiscovery, RestSettings
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet

REFRESH = 0.2
CART = "outbound|8080||cart.shop.svc.cluster.local"
NODE = "sidecar~127.0.0.1~client-1.shop~shop.svc.cluster.local"

SERVICE = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cart, namespace: shop}
spec:
  hosts: [cart.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: cart}}
"""


def workload(name: str, port: int) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: {name}, namespace: shop}}
spec:
  address: 127.0.0.1
  ports: {{http: {port}}}
  labels: {{app: cart}}
"""


def apply(store: MemoryStore, text: str) -> None:
    for config in Loader(SCHEMAS, source="test").load_strict(text, "x.yaml"):
        store.apply(config)


@pytest.fixture
async def served() -> AsyncIterator[tuple[MemoryStore, DiscoveryServer, AdminServer]]:
    store = MemoryStore("test")
    apply(store, SERVICE + "---\n" + workload("cart-1", 18101))
    store.mark_synced()
    discovery = DiscoveryServer(
        store, settings=XdsSettings(debounce=DebounceSettings(debounce_after=0.01))
    )
    rest = RestDiscovery(discovery, RestSettings(refresh_delay=REFRESH))
    admin = AdminServer(build_admin_app(DiscoveryDebugView(discovery), rest=rest))
    await admin.start("127.0.0.1", 0)
    task = asyncio.create_task(discovery.run())
    try:
        await asyncio.wait_for(discovery.wait_ready(), 10)
        yield store, discovery, admin
    finally:
        await admin.stop()
        discovery.close()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def rest_bootstrap(xds_port: int) -> dict[str, Any]:
    return envoy_bootstrap(
        EnvoyBootstrapOptions(
            node_id=NODE,
            node_cluster="client.shop",
            node_metadata={"NAMESPACE": "shop"},
            xds_port=xds_port,
            admin_port=0,
            transport=XdsTransport.REST,
            rest_refresh_delay=REFRESH,
        )
    )


async def endpoints_of(envoy: EnvoyProcess, cluster: str) -> list[int]:
    body = await envoy.clusters_json()
    for status in body.get("cluster_statuses", []):
        if status["name"] == cluster:
            return sorted(
                int(host["address"]["socket_address"]["port_value"])
                for host in status.get("host_statuses", [])
            )
    return []


async def wait_endpoints(envoy: EnvoyProcess, wanted: list[int], timeout: float) -> float:
    started = time.monotonic()
    while True:
        found = await endpoints_of(envoy, CART)
        if found == wanted:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{CART} has endpoints {found}, wanted {wanted}")
        await asyncio.sleep(0.05)


async def test_rest_envoy_gets_clusters_and_follows_endpoint_changes(
    served: tuple[MemoryStore, DiscoveryServer, AdminServer], envoy_factory: EnvoyFleet
) -> None:
    store, _discovery, admin = served
    envoy = await envoy_factory(rest_bootstrap(admin.port))

    await wait_endpoints(envoy, [18101], timeout=5)
    assert await envoy.stat("cluster_manager.cds.update_success") >= 1
    assert await envoy.stat("listener_manager.lds.update_success") >= 1
    assert await envoy.stat("cluster_manager.cds.update_rejected", default=0) == 0
    assert await envoy.stat(f"cluster.{CART}.update_rejected", default=0) == 0
    assert await envoy.stat(f"cluster.{CART}.update_success") >= 1
    dump = await envoy.config_dump()
    dynamic = next(
        c for c in dump["configs"] if c["@type"].endswith("ClustersConfigDump")
    )["dynamic_active_clusters"]
    cart = next(c["cluster"] for c in dynamic if c["cluster"]["name"] == CART)
    api = cart["eds_cluster_config"]["eds_config"]["api_config_source"]
    assert api["api_type"] == "REST" and api["cluster_names"] == [XDS_REST_CLUSTER]

    cds_success = await envoy.stat("cluster_manager.cds.update_success")
    cds_attempts = await envoy.stat("cluster_manager.cds.update_attempt")

    apply(store, workload("cart-1", 18102) + "---\n" + workload("cart-2", 18103))
    took = await wait_endpoints(envoy, [18102, 18103], timeout=5)
    assert took < 5

    # Let CDS poll a few more times: every poll is a 304, an attempt and not a success.
    await envoy.wait_stat("cluster_manager.cds.update_attempt", cds_attempts + 3, timeout=5)
    assert await envoy.stat("cluster_manager.cds.update_success") == cds_success
    assert await envoy.stat("cluster_manager.cds.update_rejected", default=0) == 0
    stats = admin.app[REST].stats
    assert stats.not_modified >= 3 and stats.errors == {} and stats.nacks == {}
