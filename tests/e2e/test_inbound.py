"""The proxy's own workload: inbound clusters and listeners, with real Envoy.

A Sidecar ``ingress`` listener makes Envoy listen on 127.0.0.1:P and forward to the
application's ``defaultEndpoint`` (real HTTP through it). Without one, the WorkloadEntry
that is this proxy (its IP and labels) yields ``inbound|<port>||`` clusters to the
application's port, and listeners that do not bind. Editing that WorkloadEntry (its ports,
or labels that bring it under another service) pushes the proxy its new inbound clusters
and listeners at once (istiod's ProxyUpdate), while a second Envoy that is not the entry
gets the endpoint change as EDS only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from pilothouse.protocol.type_urls import CDS, LDS
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import free_port, wait_for_port
from tests.e2e.harness.upstreams import UpstreamPool

NODE = "sidecar~127.0.0.1~app-1.shop~shop.svc.cluster.local"


def workload(app_port: int) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: app, namespace: shop}}
spec:
  hosts: [app.shop.svc.cluster.local]
  resolution: STATIC
  ports: [{{number: 8000, name: http, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: shop-app}}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: app-1, namespace: shop}}
spec:
  address: 127.0.0.1
  ports: {{http: {app_port}}}
  labels: {{app: shop-app}}
"""


async def start(envoy_factory: EnvoyFleet, plane: ControlPlane) -> EnvoyProcess:
    options = EnvoyBootstrapOptions(
        node_id=NODE,
        node_metadata={"LABELS": {"app": "shop-app"}},
        xds_port=plane.port,
        admin_port=0,
        transport=XdsTransport.DELTA,
    )
    return await envoy_factory(envoy_bootstrap(options))


async def test_sidecar_ingress_listener_carries_traffic_to_the_app(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    app = await upstream_factory("app")
    inbound = free_port()
    plane = ControlPlane()
    plane.apply_yaml(
        workload(app.port)
        + f"""---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {{name: app, namespace: shop}}
spec:
  workloadSelector: {{labels: {{app: shop-app}}}}
  ingress:
  - port: {{number: {inbound}, protocol: HTTP, name: http}}
    bind: 127.0.0.1
    defaultEndpoint: 127.0.0.1:{app.port}
  egress: [{{hosts: ["./*"]}}]
"""
    )
    await plane.start()
    try:
        envoy = await start(envoy_factory, plane)
        await wait_for_port(inbound, timeout=10)
        report = await send_requests("127.0.0.1", inbound, 10)
        assert report.ok == 10 and set(report.upstreams) == {"app"}
        assert f"inbound|{inbound}||" in {
            s["name"] for s in (await envoy.clusters_json())["cluster_statuses"]
        }
    finally:
        await plane.stop()


async def test_the_workload_entry_of_the_proxy_gives_inbound_clusters(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    app = await upstream_factory("app")
    plane = ControlPlane()
    plane.apply_yaml(workload(app.port))
    await plane.start()
    try:
        envoy = await start(envoy_factory, plane)
        statuses = {s["name"]: s for s in (await envoy.clusters_json())["cluster_statuses"]}
        hosts = statuses["inbound|8000||"]["host_statuses"]
        assert [h["address"]["socket_address"]["port_value"] for h in hosts] == [app.port]
        listeners = await envoy.listeners()
        assert "inbound|8000||" in listeners  # present, but not bound (no iptables here)
    finally:
        await plane.stop()


APP = "outbound|8000||app.shop.svc.cluster.local"
APP_SERVICE = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: app, namespace: shop}
spec:
  hosts: [app.shop.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 8000, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: shop-app}}
"""
METRICS_SERVICE = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: metrics, namespace: shop}
spec:
  hosts: [metrics.shop.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 9090, name: http-metrics, protocol: HTTP}]
  workloadSelector: {labels: {role: metrics}}
"""


def app_entry(app_port: int, labels: str = "{app: shop-app}") -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: app-1, namespace: shop}}
spec:
  address: 127.0.0.1
  ports: {{http: {app_port}, http-metrics: 19090}}
  labels: {labels}
"""


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def host_ports(envoy: EnvoyProcess, cluster: str) -> list[int]:
    for status in (await envoy.clusters_json()).get("cluster_statuses", []):
        if status["name"] == cluster:
            return sorted(
                h["address"]["socket_address"]["port_value"]
                for h in status.get("host_statuses", [])
            )
    return []


async def test_editing_the_proxys_workload_entry_pushes_its_inbound_config_alone(
    envoy_factory: EnvoyFleet,
) -> None:
    """The entry's port moves (18001 → 18002), then a label brings it under a second
    service (port 9090): the Envoy that is the entry gets its ``inbound|8000||`` cluster
    to the new port, then an ``inbound|9090||`` cluster and listener; another Envoy in the
    namespace (another IP, watching both services) sees the endpoints move by EDS and
    receives no CDS or LDS response at all."""
    plane = ControlPlane()
    plane.apply_yaml(APP_SERVICE + "---\n" + METRICS_SERVICE + "---\n" + app_entry(18001))
    await plane.start()
    try:
        entry = await envoy_factory(
            envoy_bootstrap(
                EnvoyBootstrapOptions(
                    node_id=NODE,
                    node_metadata={"LABELS": {"app": "shop-app", "role": "metrics"}},
                    xds_port=plane.port,
                    admin_port=0,
                    transport=XdsTransport.DELTA,
                )
            )
        )
        client = await envoy_factory(
            envoy_bootstrap(
                EnvoyBootstrapOptions(
                    node_id="sidecar~127.0.0.2~client-1.shop~shop.svc.cluster.local",
                    node_metadata={"LABELS": {"app": "client"}},
                    xds_port=plane.port,
                    admin_port=0,
                    transport=XdsTransport.SOTW,
                )
            )
        )
        assert await host_ports(entry, "inbound|8000||") == [18001]
        assert "inbound|9090||" not in await entry.listeners()
        assert await host_ports(client, APP) == [18001]
        (connection,) = (c for c in plane.connections() if c.proxy.ip == "127.0.0.2")
        sent = (connection.stats.responses.get(CDS, 0), connection.stats.responses.get(LDS, 0))
        counters = ("cluster_manager.cds.update_success", "listener_manager.lds.update_success")
        before = [await client.stat(name) for name in counters]

        plane.apply_yaml(app_entry(18002))  # the entry's port
        await eventually(lambda: _ports_are(entry, "inbound|8000||", [18002]))
        await eventually(lambda: _ports_are(client, APP, [18002]))  # EDS reached the other

        plane.apply_yaml(app_entry(18002, "{app: shop-app, role: metrics}"))  # its services
        await eventually(lambda: _has_listener(entry, "inbound|9090||"))
        assert await host_ports(entry, "inbound|9090||") == [19090]
        metrics = "outbound|9090||metrics.shop.svc.cluster.local"
        await eventually(lambda: _ports_are(client, metrics, [19090]))

        assert [await client.stat(name) for name in counters] == before
        assert (
            connection.stats.responses.get(CDS, 0),
            connection.stats.responses.get(LDS, 0),
        ) == sent
        assert plane.discovery is not None
        # pilot_push_triggers{type="proxy"}: one full push per edit, to the entry's Envoy
        # alone (a full push that changes nothing would send no response to the other)
        assert plane.discovery.stats.push_triggers.get("proxy", 0) == 2
    finally:
        await plane.stop()


async def _ports_are(envoy: EnvoyProcess, cluster: str, ports: list[int]) -> bool:
    return await host_ports(envoy, cluster) == ports


async def _has_listener(envoy: EnvoyProcess, name: str) -> bool:
    return name in await envoy.listeners()
