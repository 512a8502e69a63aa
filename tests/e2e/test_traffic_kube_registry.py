"""A Kubernetes Service and its EndpointSlices reach a real Envoy carrying real HTTP.

The five in-memory feeds (:mod:`tests.memory_kube`) stand in for the informers of a
Kubernetes API server, which cannot run here: they deliver the Service, EndpointSlice,
Pod, Node and Namespace objects as the API server's JSON, as watch events, to an
in-process pilothouse, through ``DiscoveryServer(kube=KubeFeeds(...))``: the path the
real informers (and, in tests, the fake API server behind them) take. Istio config
(DestinationRule, Gateway, VirtualService) comes from the usual memory store.

Each Pod is a local upstream on 127.0.0.1 (its own slice, since every upstream listens on
its own port). A real Envoy gateway routes by subset; when a Pod turns unready, its
endpoint leaves by EDS alone: Envoy's CDS, LDS and RDS update counters stay put while the
cluster's EDS counter moves. A sidecar whose node id names a Pod, and that sends no
metadata, gets that Pod's labels, service account, locality and inbound ports, and sees a
headless Service as a passthrough cluster and an ExternalName one as a DNS cluster.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.upstreams import Upstream, UpstreamPool
from tests.e2e.traffic_mesh import (
    destination_rule,
    fqdn,
    gateway,
    prefix,
    render,
    start_gateway,
    to,
    virtual_service,
)
from tests.integration.push_settled import quiet, released, released_since
from tests.memory_kube import MemoryCluster, endpoint_slice, namespace, node, pod, service

NS = "kubeshop"
REVIEWS = fqdn("reviews", NS)
CLUSTER = f"outbound|9080||{REVIEWS}"
CDS = "cluster_manager.cds.update_success"
LDS = "listener_manager.lds.update_success"


def pod_slice(name: str, upstream: Upstream, ready: bool) -> dict[str, object]:
    return endpoint_slice(
        f"reviews-{name}", NS, "reviews", [("http-web", upstream.port)],
        [(upstream.host, f"reviews-{name}", ready)],
    )  # fmt: skip


def reviews_cluster(v1: Upstream, v2: Upstream) -> MemoryCluster:
    cluster = MemoryCluster()
    cluster.namespaces.apply(namespace(NS))
    cluster.nodes.apply(node("node-a", "eu-west1", "eu-west1-b"))
    cluster.nodes.apply(node("node-b", "eu-west1", "eu-west1-c"))
    cluster.services.apply(
        service(
            "reviews", NS, [{"name": "http-web", "port": 9080, "targetPort": "web"}],
            selector={"app": "reviews"}, cluster_ip="10.96.3.7",
        )
    )  # fmt: skip
    for name, upstream, zone_node in (("v1", v1, "node-a"), ("v2", v2, "node-b")):
        cluster.pods.apply(
            pod(f"reviews-{name}", NS, upstream.host, {"app": "reviews", "version": name},
                service_account="reviews", node=zone_node)
        )  # fmt: skip
        cluster.endpointslices.apply(pod_slice(name, upstream, True))
    return cluster


async def rds_updates(envoy: EnvoyProcess) -> int:
    stats = await envoy.stats(r"\.rds\..*update_success$")
    return sum(stats.values())


async def host_localities(envoy: EnvoyProcess) -> dict[int, str]:
    """The ports of CLUSTER's hosts, each with its locality as ``region/zone``."""
    clusters = (await envoy.clusters_json())["cluster_statuses"]
    (found,) = [c for c in clusters if c["name"] == CLUSTER]
    out = {}
    for host in found.get("host_statuses", ()):
        locality = host.get("locality", {})
        port = host["address"]["socket_address"]["port_value"]
        out[port] = f"{locality.get('region', '')}/{locality.get('zone', '')}"
    return out


@pytest.mark.parametrize("transport", [XdsTransport.SOTW, XdsTransport.DELTA])
async def test_kubernetes_service_routes_and_unready_pod_leaves_by_eds_only(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool, transport: XdsTransport
) -> None:
    v1 = await upstream_factory("reviews-v1")
    v2 = await upstream_factory("reviews-v2")
    cluster = reviews_cluster(v1, v2)
    listen = free_port()
    plane = ControlPlane(kube=cluster.feeds())
    plane.apply_yaml(
        render(
            destination_rule("reviews", NS, {"v1": {"version": "v1"}, "v2": {"version": "v2"}}),
            gateway(NS, listen),
            virtual_service(
                "reviews",
                NS,
                [
                    {"match": prefix("/v1"), "route": [to(REVIEWS, "v1")]},
                    {"match": prefix("/v2"), "route": [to(REVIEWS, "v2")]},
                    {"route": [to(REVIEWS)]},
                ],
            ),
        )
    )
    await plane.start()
    try:
        envoy = await start_gateway(envoy_factory, plane, NS, listen, transport)
        # routes and subsets: the pods' labels reached the endpoints
        only_v1 = await send_requests(LOOPBACK, listen, 10, path="/v1/x")
        only_v2 = await send_requests(LOOPBACK, listen, 10, path="/v2/x")
        both = await send_requests(LOOPBACK, listen, 40, concurrency=4)
        assert only_v1.upstreams == {"reviews-v1": 10}, only_v1.summary()
        assert only_v2.upstreams == {"reviews-v2": 10}, only_v2.summary()
        assert set(both.upstreams) == {"reviews-v1", "reviews-v2"}, both.summary()
        # endpoints carry the nodes' localities
        assert await host_localities(envoy) == {
            v1.port: "eu-west1/eu-west1-b",
            v2.port: "eu-west1/eu-west1-c",
        }

        assert plane.discovery is not None
        stats = plane.discovery.stats
        full_before, eds_before = stats.full_pushes, stats.eds_pushes
        cds, lds, rds = await envoy.stat(CDS), await envoy.stat(LDS), await rds_updates(envoy)
        eds = await envoy.stat(f"cluster.{CLUSTER}.update_success")
        assert min(cds, lds, rds, eds) >= 1  # each counter counts what it should

        # the kubelet marks reviews-v2 unready; the EndpointSlice controller follows
        cluster.pods.apply(
            pod("reviews-v2", NS, v2.host, {"app": "reviews", "version": "v2"},
                service_account="reviews", node="node-b", ready=False)
        )  # fmt: skip
        cluster.endpointslices.apply(pod_slice("v2", v2, False))
        await envoy.wait_stat(f"cluster.{CLUSTER}.update_success", eds + 1, timeout=10)
        deadline = time.monotonic() + 10
        while set(await host_localities(envoy)) != {v1.port}:
            assert time.monotonic() < deadline, await host_localities(envoy)
            await asyncio.sleep(0.05)
        after = await send_requests(LOOPBACK, listen, 20)
        assert after.upstreams == {"reviews-v1": 20}, after.summary()
        # EDS only: no new PushContext, and Envoy got no clusters, listeners or routes
        assert (stats.full_pushes, stats.eds_pushes > eds_before) == (full_before, True)
        assert await envoy.stat(CDS) == cds
        assert await envoy.stat(LDS) == lds
        assert await rds_updates(envoy) == rds
    finally:
        await plane.stop()


async def inbound_hosts(envoy: EnvoyProcess, timeout: float = 10) -> list[int]:
    """The ports of the ``inbound|9080||`` cluster's hosts, once Envoy has the cluster."""
    deadline = time.monotonic() + timeout
    while True:
        statuses = {s["name"]: s for s in (await envoy.clusters_json())["cluster_statuses"]}
        if "inbound|9080||" in statuses:
            hosts = statuses["inbound|9080||"].get("host_statuses", ())
            return [h["address"]["socket_address"]["port_value"] for h in hosts]
        assert time.monotonic() < deadline, sorted(statuses)
        await asyncio.sleep(0.05)


async def test_sidecar_of_a_pod_takes_labels_account_and_inbound_ports_from_it(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    """A sidecar whose node carries no metadata at all: its node id names the Pod. It
    connects before its Pod is ready (as a real sidecar does); readiness then brings its
    inbound port, and a label change on the Pod reaches its identity (istiod's
    ProxyUpdate)."""
    v1 = await upstream_factory("reviews-v1")
    v2 = await upstream_factory("reviews-v2")
    cluster = reviews_cluster(v1, v2)
    cluster.endpointslices.apply(pod_slice("v1", v1, False))
    cluster.services.apply(service("db", NS, [{"name": "tcp-pg", "port": 5432}], cluster_ip="None"))
    cluster.services.apply(
        service("search", NS, [{"name": "http", "port": 8000}], kind="ExternalName",
                external_name="localhost")
    )  # fmt: skip
    plane = ControlPlane(kube=cluster.feeds())
    await plane.start()
    try:
        options = EnvoyBootstrapOptions(
            node_id=f"sidecar~{v1.host}~reviews-v1.{NS}~{NS}.svc.cluster.local",
            xds_port=plane.port,
            admin_port=0,
            transport=XdsTransport.DELTA,
        )
        envoy = await envoy_factory(envoy_bootstrap(options))
        await envoy.wait_stat(LDS, 1, timeout=10)
        proxy = plane.only_connection().proxy
        assert proxy.labels["version"] == "v1" and proxy.labels["app"] == "reviews"
        assert (proxy.metadata or {})["SERVICE_ACCOUNT"] == "reviews"
        assert proxy.locality == "eu-west1/eu-west1-b"
        statuses = {s["name"] for s in (await envoy.clusters_json())["cluster_statuses"]}
        assert "inbound|9080||" not in statuses  # not ready: no endpoint selects it yet
        # a headless Service is a passthrough cluster, an ExternalName one resolves the name
        dumped = await envoy.config_dump()
        types = {
            c["cluster"]["name"]: c["cluster"].get("type")
            for section in dumped["configs"]
            for c in section.get("dynamic_active_clusters", ())
        }
        assert types[f"outbound|5432||{fqdn('db', NS)}"] == "ORIGINAL_DST"
        assert types[f"outbound|8000||{fqdn('search', NS)}"] == "STRICT_DNS"
        assert types[CLUSTER] == "EDS"
        assert await envoy.stat("cluster_manager.cds.update_rejected", default=0) == 0

        cluster.endpointslices.apply(pod_slice("v1", v1, True))
        # the Pod's own endpoint (v1's port), not the other Pod's
        assert await inbound_hosts(envoy) == [v1.port]
        assert "inbound|9080||" in await envoy.listeners()

        cluster.pods.apply(
            pod("reviews-v1", NS, v1.host, {"app": "reviews", "version": "v1", "track": "beta"},
                service_account="reviews", node="node-a")
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while plane.only_connection().proxy.labels.get("track") != "beta":
            assert time.monotonic() < deadline, plane.only_connection().proxy.labels
            await asyncio.sleep(0.05)
        # its endpoint carries the new label too, so the inbound port stays
        await asyncio.sleep(0.3)
        assert await inbound_hosts(envoy) == [v1.port]
    finally:
        await plane.stop()


async def test_policy_selects_a_sidecar_by_its_pods_labels(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    """A sidecar that sends no labels of its own is selected by an AuthorizationPolicy
    through its Pod's labels: its inbound listener gets the RBAC filter, and a policy for
    another app's labels does not reach it."""
    v1 = await upstream_factory("reviews-v1")
    v2 = await upstream_factory("reviews-v2")
    cluster = reviews_cluster(v1, v2)
    plane = ControlPlane(kube=cluster.feeds())
    await plane.start()
    try:
        options = EnvoyBootstrapOptions(
            node_id=f"sidecar~{v1.host}~reviews-v1.{NS}~{NS}.svc.cluster.local",
            xds_port=plane.port,
            admin_port=0,
            transport=XdsTransport.SOTW,
        )
        envoy = await envoy_factory(envoy_bootstrap(options))
        assert await inbound_hosts(envoy) == [v1.port]
        assert not await inbound_rbac(envoy)

        triggers = released(plane)
        plane.apply_yaml(render(deny_delete("ratings-only", {"app": "ratings"})))
        await released_since(plane, triggers)
        await quiet(plane)  # whatever the change pushed, Envoy has taken (ACKed)
        assert not await inbound_rbac(envoy)

        plane.apply_yaml(render(deny_delete("reviews-read-only", {"app": "reviews"})))
        deadline = time.monotonic() + 10
        while not await inbound_rbac(envoy):
            assert time.monotonic() < deadline, "the Pod's labels did not select its sidecar"
            await asyncio.sleep(0.1)
    finally:
        await plane.stop()


def deny_delete(name: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "security.istio.io/v1",
        "kind": "AuthorizationPolicy",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": labels},
            "action": "DENY",
            "rules": [{"to": [{"operation": {"methods": ["DELETE"]}}]}],
        },
    }


async def inbound_rbac(envoy: EnvoyProcess) -> bool:
    """Whether a listener Envoy holds carries an RBAC filter (only inbound ones can)."""
    listeners = [
        section.get("dynamic_listeners", ())
        for section in (await envoy.config_dump())["configs"]
        if section.get("@type", "").endswith("ListenersConfigDump")
    ]
    return '"envoy.filters.http.rbac"' in json.dumps(listeners)
