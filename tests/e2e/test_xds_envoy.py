"""Real Envoy against pilothouse's xDS server, in SotW and delta ADS.

Covers: clusters and endpoints of a ServiceEntry reach Envoy; moving a WorkloadEntry
changes only EDS (no CDS response, Envoy's CDS counters unchanged); a resource Envoy
rejects is NACKed, recorded with its error, not resent, and Envoy keeps its last good
config; a restarted server re-syncs Envoy, and in delta it does not resend unchanged
resources.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.push.request import PushRequest
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import ClusterGenerator, encode
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet

CLUSTER = "outbound|8000||httpbin.shop.svc.cluster.local"
SUBSET = "outbound|8000|v1|httpbin.shop.svc.cluster.local"
NODE = "sidecar~127.0.0.1~sleep-1.shop~shop.svc.cluster.local"

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: shop}
spec:
  hosts: [httpbin.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8000, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: httpbin, namespace: shop}
spec:
  host: httpbin.shop.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}]
"""


def workload(port: int, address: str = "127.0.0.1") -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: httpbin-1, namespace: shop}}
spec:
  address: {address}
  ports: {{http: {port}}}
  labels: {{app: httpbin, version: v1}}
"""


TRANSPORTS = [XdsTransport.SOTW, XdsTransport.DELTA]


@pytest.fixture
async def plane() -> AsyncIterator[ControlPlane]:
    control_plane = ControlPlane()
    control_plane.apply_yaml(MESH + "---\n" + workload(18001))
    await control_plane.start()
    try:
        yield control_plane
    finally:
        await control_plane.stop()


async def attach(envoy_factory: EnvoyFleet, port: int, transport: XdsTransport) -> EnvoyProcess:
    options = EnvoyBootstrapOptions(node_id=NODE, xds_port=port, admin_port=0, transport=transport)
    return await envoy_factory(envoy_bootstrap(options))


async def endpoints_of(envoy: EnvoyProcess, cluster: str) -> list[tuple[str, int]]:
    for status in (await envoy.clusters_json()).get("cluster_statuses", []):
        if status["name"] == cluster:
            return sorted(
                (
                    h["address"]["socket_address"]["address"],
                    h["address"]["socket_address"]["port_value"],
                )
                for h in status.get("host_statuses", [])
            )
    return []


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_envoy_receives_clusters_and_endpoints(
    plane: ControlPlane, envoy_factory: EnvoyFleet, transport: XdsTransport
) -> None:
    envoy = await attach(envoy_factory, plane.port, transport)
    assert await endpoints_of(envoy, CLUSTER) == [("127.0.0.1", 18001)]
    assert await endpoints_of(envoy, SUBSET) == [("127.0.0.1", 18001)]
    names = {s["name"] for s in (await envoy.clusters_json())["cluster_statuses"]}
    assert {CLUSTER, SUBSET, "BlackHoleCluster", "PassthroughCluster"} <= names
    assert await envoy.stat("control_plane.connected_state") == 1
    assert await envoy.stat("cluster_manager.cds.update_rejected") == 0
    connection = plane.only_connection()
    assert connection.proxy.namespace == "shop"
    session = connection.sotw or connection.delta_session
    assert session is not None
    await eventually(lambda: _synced(session, CDS), 3)


async def _synced(session: Any, type_url: str) -> bool:
    watch = session.watch(type_url)  # None until the proxy has asked for the type
    return watch is not None and str(watch.sync_status) in ("SYNCED", "SyncStatus.SYNCED")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_moving_a_workload_changes_only_eds(
    plane: ControlPlane, envoy_factory: EnvoyFleet, transport: XdsTransport
) -> None:
    envoy = await attach(envoy_factory, plane.port, transport)
    connection = plane.only_connection()
    await eventually(lambda: _synced(connection.sotw or connection.delta_session, EDS), 3)
    cds_success = await envoy.stat("cluster_manager.cds.update_success")
    cds_sent = connection.stats.responses[CDS]
    eds_sent = connection.stats.responses[EDS]

    plane.apply_yaml(workload(18002))

    async def moved() -> bool:
        return await endpoints_of(envoy, CLUSTER) == [("127.0.0.1", 18002)]

    await eventually(moved)
    await eventually(lambda: _synced(connection.sotw or connection.delta_session, EDS), 3)
    assert await endpoints_of(envoy, SUBSET) == [("127.0.0.1", 18002)]
    assert connection.stats.responses[CDS] == cds_sent, "an endpoint move must not push CDS"
    assert connection.stats.responses[EDS] > eds_sent
    assert await envoy.stat("cluster_manager.cds.update_success") == cds_success
    assert plane.discovery is not None and plane.discovery.stats.eds_pushes >= 1


class PoisonedClusters(ClusterGenerator):
    """The normal CDS plus, when ``poison`` is set, one cluster Envoy must reject.

    pilothouse's validation keeps such clusters from ever being generated from real
    config, so the test injects one to exercise the NACK path end to end.
    """

    poison = False

    def generate(self, given: GenerationInput) -> Resources:
        resources = dict(super().generate(given))
        if self.poison:
            bad = cluster_pb2.Cluster(name="poisoned", type=cluster_pb2.Cluster.STATIC)
            bad.connect_timeout.seconds = -1
            resources["poisoned"] = encode(bad, "poisoned")
        return resources


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_rejected_cluster_is_recorded_and_not_resent(
    plane: ControlPlane, envoy_factory: EnvoyFleet, transport: XdsTransport
) -> None:
    assert plane.discovery is not None
    generator = PoisonedClusters()
    plane.discovery.register_generator(generator)
    envoy = await attach(envoy_factory, plane.port, transport)
    connection = plane.only_connection()
    session = connection.sotw or connection.delta_session
    assert session is not None

    generator.poison = True
    plane.discovery.request_push(PushRequest.everything())

    async def rejected() -> bool:
        watch = session.watch(CDS)
        return watch is not None and watch.last_error is not None

    await eventually(rejected)
    watch = session.watch(CDS)
    assert watch is not None and watch.last_error is not None
    assert "poisoned" in watch.last_error.message or "duration" in watch.last_error.message.lower()
    assert await envoy.stat("cluster_manager.cds.update_rejected") >= 1
    sent = connection.stats.responses[CDS]

    # the same content is not sent again, whatever pushes happen
    plane.discovery.request_push(PushRequest.everything())
    await asyncio.sleep(0.5)
    assert connection.stats.responses[CDS] == sent
    # Envoy kept its last good config
    assert await endpoints_of(envoy, CLUSTER) == [("127.0.0.1", 18001)]
    assert plane.discovery.stats.rejects.get("cds", 0) + session.rejects.get(CDS, 0) >= 1

    # a fix is sent, ACKed, and clears the error
    generator.poison = False
    plane.discovery.request_push(PushRequest.everything())
    await eventually(lambda: _synced(session, CDS))
    watch = session.watch(CDS)
    assert watch is not None and watch.last_error is None


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_restarted_server_resyncs_envoy(
    envoy_factory: EnvoyFleet, transport: XdsTransport
) -> None:
    first = ControlPlane()
    first.apply_yaml(MESH + "---\n" + workload(18001))
    port = await first.start()
    envoy = await attach(envoy_factory, port, transport)
    await first.stop()
    await eventually(lambda: _stat_is(envoy, "control_plane.connected_state", 0), 5)

    second = ControlPlane(store=first.store)
    await second.start(port)
    try:
        await eventually(lambda: _has_connection(second), 10)
        connection = second.only_connection()
        session = connection.sotw or connection.delta_session
        assert session is not None
        await eventually(lambda: _synced(session, EDS), 5)
        assert await envoy.stat("control_plane.connected_state") == 1
        assert await endpoints_of(envoy, CLUSTER) == [("127.0.0.1", 18001)]
        if transport is XdsTransport.DELTA:
            # Envoy reported what it holds; nothing changed, so nothing is resent
            assert connection.stats.resources_sent.get(CDS, 0) == 0
            assert connection.stats.resources_sent.get(EDS, 0) == 0
    finally:
        await second.stop()


async def _stat_is(envoy: EnvoyProcess, name: str, value: int) -> bool:
    return await envoy.stat(name) == value


async def _has_connection(plane: ControlPlane) -> bool:
    return len(plane.connections()) == 1


def _max_connections(dump: dict[str, Any], section: str, cluster: str) -> int | None:
    """``max_connections`` of ``cluster``'s default threshold in a CDS config dump section
    (``dynamic_active_clusters`` or ``dynamic_warming_clusters``); None if not there."""
    for config in dump["configs"]:
        if not config["@type"].endswith("ClustersConfigDump"):
            continue
        for entry in config.get(section, []):
            if entry["cluster"]["name"] == cluster:
                thresholds = entry["cluster"].get("circuit_breakers", {}).get("thresholds", [])
                for threshold in thresholds:
                    if "max_connections" in threshold:
                        return int(threshold["max_connections"])
                return None
    return None


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_changed_cluster_warms_on_the_one_assignment_pushed_after_it(
    plane: ControlPlane, envoy_factory: EnvoyFleet, transport: XdsTransport
) -> None:
    """A DestinationRule edit that changes clusters but not endpoints: Envoy warms the
    changed clusters on the EDS response pushed right after CDS (the stream is ordered,
    so it arrives once the new clusters wait for it), and the server sends exactly one
    CDS and one EDS response for it, not a second EDS answer to Envoy's next ACK."""
    envoy = await attach(envoy_factory, plane.port, transport)
    connection = plane.only_connection()
    session = connection.sotw or connection.delta_session
    assert session is not None
    await eventually(lambda: _synced(session, EDS), 3)
    cds_sent = connection.stats.responses[CDS]
    eds_sent = connection.stats.responses[EDS]
    updated = await envoy.stat("cluster_manager.cluster_modified")

    plane.apply_yaml(MESH.replace(
        "  subsets: [{name: v1, labels: {version: v1}}]",
        "  trafficPolicy: {connectionPool: {tcp: {maxConnections: 7}}}\n"
        "  subsets: [{name: v1, labels: {version: v1}}]",
    ))

    async def warmed() -> bool:
        dump = await envoy.config_dump()
        return (
            _max_connections(dump, "dynamic_active_clusters", CLUSTER) == 7
            and _max_connections(dump, "dynamic_active_clusters", SUBSET) == 7
            and await envoy.stat("cluster_manager.warming_clusters") == 0
        )

    await eventually(warmed, 5)
    assert await envoy.stat("cluster_manager.cluster_modified") >= updated + 2
    await eventually(lambda: _synced(session, EDS), 3)
    await eventually(lambda: _synced(session, CDS), 3)
    await asyncio.sleep(0.5)  # room for a late extra answer to show up
    assert connection.stats.responses[CDS] == cds_sent + 1
    assert connection.stats.responses[EDS] == eds_sent + 1, "one fresh assignment is enough"
    assert await endpoints_of(envoy, CLUSTER) == [("127.0.0.1", 18001)]
    assert await endpoints_of(envoy, SUBSET) == [("127.0.0.1", 18001)]
