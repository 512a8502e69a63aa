"""The proxy's own workload: inbound clusters and listeners, with real Envoy.

A Sidecar ``ingress`` listener makes Envoy listen on 127.0.0.1:P and forward to the
application's ``defaultEndpoint`` (real HTTP through it). Without one, the WorkloadEntry
that is this proxy (its IP and labels) yields ``inbound|<port>||`` clusters to the
application's port, and listeners that do not bind.
"""

from __future__ import annotations

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
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
