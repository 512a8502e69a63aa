"""``/metrics`` after known events: pushes, NACKs, refused streams, config changes.

The server is the real DiscoveryServer over grpc.aio with its admin app; the proxies
are the loadtest package's simulated Envoys (real gRPC clients that ACK and, when told,
NACK) or raw ADS streams; ``/metrics`` is fetched over HTTP and read back with
prometheus_client's text parser. Every check compares a scrape after the event with
one before it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import grpc
import pytest

from pilothouse.admin.app import build_admin_app
from pilothouse.admin.metrics import metrics_routes, server_metrics
from pilothouse.admin.server import AdminServer
from pilothouse.loadtest.client import RejectHook
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.holdings import ReceivedResource
from pilothouse.loadtest.identity import ISTIO_VERSION
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS, EDS, LDS
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.server.ads import add_discovery_services, new_grpc_server
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.e2e.harness.control_plane import FAST
from tests.integration.ads_stream import open_ads, sotw_request
from tests.integration.metrics_scrape import MetricsPlane, Scrape, scrape
from tests.integration.push_settled import answered

NS = "shop"
PROXIES = 3


def mesh(max_connections: int = 10, address: str = "10.1.0.1", prefix: str = "/") -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: reviews, namespace: {NS}}}
spec:
  hosts: [reviews.{NS}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: 9080, name: http, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: reviews}}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: reviews-1, namespace: {NS}}}
spec:
  address: {address}
  labels: {{app: reviews}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: reviews, namespace: {NS}}}
spec:
  host: reviews.{NS}.svc.cluster.local
  trafficPolicy: {{connectionPool: {{tcp: {{maxConnections: {max_connections}}}}}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: reviews, namespace: {NS}}}
spec:
  hosts: [reviews.{NS}.svc.cluster.local]
  http:
  - match: [{{uri: {{prefix: "{prefix}"}}}}]
    route: [{{destination: {{host: reviews.{NS}.svc.cluster.local}}}}]
"""


def service_entry(name: str) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: {NS}}}
spec:
  hosts: [{name}.{NS}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: 7070, name: tcp, protocol: TCP}}]
  endpoints: [{{address: 10.2.0.1}}]
"""


@pytest.fixture
async def plane() -> AsyncIterator[MetricsPlane]:
    plane = MetricsPlane()
    plane.plane.apply_yaml(mesh())
    await plane.start()
    try:
        yield plane
    finally:
        await plane.stop()


async def connected_fleet(
    plane: MetricsPlane,
    count: int = PROXIES,
    reject: RejectHook | None = None,
    *,
    delta: bool = False,
) -> ProxyFleet:
    fleet = ProxyFleet(
        f"127.0.0.1:{plane.plane.port}",
        fleet_identities(count, namespaces=(NS,), app="productpage"),
        reject=reject,
        delta=delta,
    )
    await fleet.start()
    report = await fleet.wait_converged(timeout=30)
    assert report.converged, report.unconverged
    await quiet(plane)
    return fleet


async def quiet(plane: MetricsPlane, timeout: float = 20.0) -> None:
    """No push queued or running, every response written and answered by its proxy."""
    deadline = time.monotonic() + timeout
    discovery = plane.discovery
    while discovery.pending_pushes() or any(
        c.settling or not c.outbound.empty() or not answered(c) for c in plane.plane.connections()
    ):
        assert time.monotonic() < deadline, "pushes never settled"
        await asyncio.sleep(0.02)


async def until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        await asyncio.sleep(0.02)


def responses(proxies: tuple[SimulatedProxy, ...], type_url: str) -> int:
    return sum(p.counters(type_url).responses for p in proxies)


def delta(before: Scrape, after: Scrape, name: str, **labels: str) -> float:
    return after.sample(name, **labels) - before.sample(name, **labels)


async def test_a_push_counts_once_per_connected_proxy(plane: MetricsPlane) -> None:
    fleet = await connected_fleet(plane)
    try:
        before = await plane.scrape()
        clusters_before = responses(fleet.proxies, CDS)
        plane.plane.apply_yaml(mesh(max_connections=20))  # a DestinationRule: CDS to all
        await until(
            lambda: responses(fleet.proxies, CDS) == clusters_before + PROXIES, "CDS pushed"
        )
        await quiet(plane)
        after = await plane.scrape()
    finally:
        await fleet.close()
    assert delta(before, after, "pilot_xds_pushes", type="cds") == PROXIES
    assert delta(before, after, "pilot_xds_push_time_count", type="cds") == PROXIES
    assert delta(before, after, "pilot_xds_config_size_bytes_count", type=CDS) == PROXIES
    assert delta(before, after, "pilot_proxy_convergence_time_count") == PROXIES
    assert delta(before, after, "pilot_proxy_queue_time_count") == PROXIES
    # every response written is one push of its type and one send
    written = sum(
        delta(before, after, "pilot_xds_pushes", type=t) for t in ("cds", "eds", "lds", "rds")
    )
    assert delta(before, after, "pilot_xds_send_time_count") == written
    sizes = sum(
        delta(before, after, "pilot_xds_config_size_bytes_count", type=t)
        for t in (CDS, EDS, LDS, "type.googleapis.com/envoy.config.route.v3.RouteConfiguration")
    )
    assert sizes == written
    # a CDS response of a few clusters lands in istiod's second bucket (1 < size ≤ 10K)
    assert delta(before, after, "pilot_xds_config_size_bytes_bucket", type=CDS, le="1") == 0
    assert (
        delta(before, after, "pilot_xds_config_size_bytes_bucket", type=CDS, le="10000") == PROXIES
    )


async def test_pilot_xds_counts_the_connected_proxies_by_version(plane: MetricsPlane) -> None:
    idle = await plane.scrape()
    assert idle.sample("pilot_xds", version=ISTIO_VERSION) == 0
    fleet = await connected_fleet(plane)
    try:
        busy = await plane.scrape()
        assert busy.sample("pilot_xds", version=ISTIO_VERSION) == PROXIES
        assert len(plane.discovery.connections) == PROXIES
    finally:
        await fleet.close()
    await until(lambda: not plane.discovery.connections, "streams closed")
    gone = await plane.scrape()
    assert gone.sample("pilot_xds", version=ISTIO_VERSION) == 0  # the series stays, at 0
    # proxies going away is no error of ours
    assert gone.sample("pilot_total_xds_internal_errors") == 0
    assert gone.sample("pilot_xds_push_errors", type="unrecoverable") == 0


def reject_bad_clusters(type_url: str, resource: ReceivedResource) -> str | None:
    if type_url == CDS and "rejected" in resource.name:
        return f"cluster {resource.name} refused by the test"
    return None


@pytest.mark.parametrize("incremental", [False, True], ids=["sotw", "delta"])
async def test_a_nack_from_a_real_client_counts_one_reject(
    plane: MetricsPlane, incremental: bool
) -> None:
    proxies = 2
    fleet = await connected_fleet(plane, proxies, reject=reject_bad_clusters, delta=incremental)
    try:
        before = await plane.scrape()
        plane.plane.apply_yaml(service_entry("rejected"))
        await until(lambda: all(p.last_error(CDS) for p in fleet.proxies), "every proxy NACKed CDS")
        deadline = time.monotonic() + 10
        while True:  # the NACKs are on their way to the server
            after = await plane.scrape()
            if delta(before, after, "pilot_total_xds_rejects", type="cds") >= proxies:
                break
            assert time.monotonic() < deadline, "the NACKs never counted"
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # anything more would have come by now
        after = await plane.scrape()
    finally:
        await fleet.close()
    assert delta(before, after, "pilot_total_xds_rejects", type="cds") == proxies
    assert delta(before, after, "pilot_total_xds_rejects", type="lds") == 0
    await until(lambda: not plane.discovery.connections, "streams closed")
    closed = await plane.scrape()  # the closed streams' NACKs are kept
    assert delta(before, closed, "pilot_total_xds_rejects", type="cds") == proxies


async def test_a_request_with_a_stale_nonce_counts_an_expired_nonce(plane: MetricsPlane) -> None:
    stream = await open_ads(plane.plane.port)
    try:
        await stream.send(sotw_request(CDS, "sidecar~10.0.0.1~a.shop~shop.svc.cluster.local"))
        first = await stream.read()
        await stream.send(sotw_request(CDS, version_info=first.version_info, response_nonce="old"))
        await stream.send(sotw_request(EDS, resource_names=["nothing"], response_nonce="older"))
        await stream.send(
            sotw_request(CDS, version_info=first.version_info, response_nonce=first.nonce)
        )
        deadline = time.monotonic() + 10
        while plane.discovery.expired_nonces().get("cds", 0) < 1:  # the requests are read
            assert time.monotonic() < deadline, "the stale request was never read"
            await asyncio.sleep(0.02)
        found = await plane.scrape()
    finally:
        await stream.close()
    assert found.sample("pilot_xds_expired_nonce", type="cds") == 1
    # a first EDS request with a nonce is a reconnect, not a stale one
    assert found.sample("pilot_xds_expired_nonce", type="eds") == 0
    await until(lambda: not plane.discovery.connections, "stream closed")
    assert (await plane.scrape()).sample("pilot_xds_expired_nonce", type="cds") == 1


async def refused(port: int, first: bytes) -> grpc.StatusCode:
    stream = await open_ads(port)
    try:
        await stream.send(first)
        code, _ = await stream.status()
        return code
    finally:
        await stream.close()


async def test_refused_streams_count_by_reason(plane: MetricsPlane) -> None:
    port = plane.plane.port
    before = await plane.scrape()
    assert await refused(port, sotw_request(CDS, "not-a-node-id")) is (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    assert await refused(port, sotw_request(CDS)) is grpc.StatusCode.INVALID_ARGUMENT  # no node
    assert await refused(port, b"\xff\xff\xff") is grpc.StatusCode.INVALID_ARGUMENT
    after = await plane.scrape()
    name = "pilothouse_xds_admission_rejections_total"
    assert delta(before, after, name, reason="bad_node") == 2
    assert delta(before, after, name, reason="bad_request") == 1
    assert delta(before, after, name, reason="not_ready") == 0
    assert delta(before, after, "pilot_total_xds_internal_errors") == 0


async def test_a_server_that_is_not_ready_counts_its_refusals() -> None:
    store = MemoryStore("never-synced")
    discovery = DiscoveryServer(store, settings=FAST)
    server = new_grpc_server(FAST)
    add_discovery_services(server, discovery)
    port = server.add_insecure_port("127.0.0.1:0")
    view = DiscoveryDebugView(discovery)
    metrics = server_metrics(view)
    admin = AdminServer(build_admin_app(view, routes=metrics_routes(metrics.registry)))
    await server.start()
    try:
        admin_port = await admin.start("127.0.0.1", 0)
        before = await scrape(admin_port)
        node = "sidecar~10.0.0.1~a.shop~shop.svc.cluster.local"
        assert await refused(port, sotw_request(CDS, node)) is grpc.StatusCode.UNAVAILABLE
        after = await scrape(admin_port)
    finally:
        await admin.stop()
        await server.stop(0)
        discovery.close()
    name = "pilothouse_xds_admission_rejections_total"
    assert delta(before, after, name, reason="not_ready") == 1
    assert "pilot_services" not in after.families  # no PushContext yet


class Exploding:
    type_url = LDS

    def generate(self, given: GenerationInput) -> dict[str, object]:
        raise RuntimeError("a generator bug")


async def test_a_stream_ended_by_a_fault_of_our_own_counts_an_internal_error(
    plane: MetricsPlane,
) -> None:
    plane.discovery.register_generator(Exploding())  # type: ignore[arg-type]
    before = await plane.scrape()
    node = "sidecar~10.0.0.1~a.shop~shop.svc.cluster.local"
    assert await refused(plane.plane.port, sotw_request(LDS, node)) is grpc.StatusCode.INTERNAL
    after = await plane.scrape()
    assert delta(before, after, "pilot_total_xds_internal_errors") == 1


async def test_config_changes_count_updates_triggers_debounce_and_contexts(
    plane: MetricsPlane,
) -> None:
    fleet = await connected_fleet(plane, 1)
    try:
        steps: list[tuple[str, Scrape]] = [("start", await plane.scrape())]

        async def change(what: str, yaml: str) -> None:
            pushed = plane.discovery.stats.full_pushes + plane.discovery.stats.eds_pushes
            plane.plane.apply_yaml(yaml)
            await until(
                lambda: (
                    plane.discovery.stats.full_pushes + plane.discovery.stats.eds_pushes > pushed
                ),
                f"{what} pushed",
            )
            await quiet(plane)
            steps.append((what, await plane.scrape()))

        await change("route", mesh(prefix="/v2"))  # a VirtualService: config
        await change("endpoint", mesh(prefix="/v2", address="10.1.0.2"))  # a WorkloadEntry
        await change("service", service_entry("ratings"))  # a new ServiceEntry
    finally:
        await fleet.close()

    def moved(step: int, name: str, **labels: str) -> float:
        return delta(steps[step - 1][1], steps[step][1], name, **labels)

    # the VirtualService edit: one config update, one config trigger, one debounced
    # full push with a new PushContext
    assert moved(1, "pilot_inbound_updates", type="config") == 1
    assert moved(1, "pilot_inbound_updates", type="eds") == 0
    assert moved(1, "pilot_push_triggers", type="config") == 1
    assert moved(1, "pilot_debounce_time_count") == 1
    assert moved(1, "pilot_pushcontext_init_seconds_count") == 1
    assert moved(1, "pilot_proxy_convergence_time_count") == 1
    # the WorkloadEntry move: the EDS fast path, no PushContext, no convergence time
    assert moved(2, "pilot_inbound_updates", type="config") == 1
    assert moved(2, "pilot_inbound_updates", type="eds") == 1
    assert moved(2, "pilot_push_triggers", type="endpoint") == 1
    assert moved(2, "pilot_push_triggers", type="config") == 0
    assert moved(2, "pilot_debounce_time_count") == 1
    assert moved(2, "pilot_pushcontext_init_seconds_count") == 0
    assert moved(2, "pilot_proxy_convergence_time_count") == 0
    assert moved(2, "pilot_xds_pushes", type="eds") == 1
    # a new ServiceEntry: a service update, a service trigger, a new context
    assert moved(3, "pilot_inbound_updates", type="svc") == 1
    assert moved(3, "pilot_push_triggers", type="service") == 1
    assert moved(3, "pilot_pushcontext_init_seconds_count") == 1
    assert steps[3][1].sample("pilot_services") == 2


async def test_a_deleted_service_counts_a_svcdelete(plane: MetricsPlane) -> None:
    plane.plane.apply_yaml(service_entry("ratings"))
    await until(lambda: len(plane.discovery.context.services.services) == 2, "ratings known")
    before = await plane.scrape()
    plane.plane.delete("ServiceEntry", NS, "ratings")
    await until(lambda: len(plane.discovery.context.services.services) == 1, "ratings gone")
    after = await plane.scrape()
    assert delta(before, after, "pilot_inbound_updates", type="svcdelete") == 1
    assert delta(before, after, "pilot_inbound_updates", type="svc") == 0
    assert delta(before, after, "pilot_inbound_updates", type="config") == 1
