"""A mesh defined the Kubernetes way reaches a real Envoy through ``pilothouse serve``.

The Kubernetes API server is a fake (:mod:`tests.kube.fake_apiserver`): no real API
server can run on these machines. It speaks the real list/watch protocol over HTTP, and
``pilothouse serve --config-source k8s:// --kubeconfig ...`` (a real process) reads it
through ``kubernetes_asyncio``. A ServiceEntry stands in for the Kubernetes Service whose
endpoints are two local upstreams; a DestinationRule gives them subsets and a
VirtualService (written as ``v1beta1``) routes the gateway's real HTTP to one of them.
Editing the VirtualService moves the traffic, also across a dropped watch and a 410 Gone
(history compacted while the watch was down); deleting it removes its routes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pilothouse.bootstrap.envoy import XdsTransport
from tests import memory_kube as kube
from tests.e2e.harness.client import fetch, send_requests
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    destination_rule,
    fqdn,
    gateway,
    gateway_bootstrap,
    service,
    to,
    virtual_service,
)
from tests.kube.fake_apiserver import FakeApiServer

NAMESPACE = "kube"
VS = "virtualservices.networking.istio.io"


def routes_to(subset: str) -> dict[str, Any]:
    written = virtual_service(
        "reviews", NAMESPACE, [{"route": [to(fqdn("reviews", NAMESPACE), subset)]}]
    )
    written["apiVersion"] = "networking.istio.io/v1beta1"
    return written


def serve_kubernetes(kubeconfig: Path, log_path: Path) -> ServeProcess:
    """A started ``pilothouse serve`` reading the cluster ``kubeconfig`` names."""
    return ServeProcess(
        (),
        xds_port=free_port(),
        admin_port=free_port(),
        log_path=log_path,
        log_level="info",
        environment={
            "PILOTHOUSE_CONFIG_SOURCES": "k8s://",
            "PILOTHOUSE_KUBECONFIG": str(kubeconfig),
        },
    ).start()


async def upstreams_seen(port: int, count: int = 20) -> dict[str, int]:
    report = await send_requests(LOOPBACK, port, count, total_timeout=10)
    return {"ok": report.ok, **report.upstreams}


async def eventually(check: Callable[[], Any], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last is True:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not reached in {timeout}s; last: {last}")


async def test_kubernetes_custom_resources_route_real_traffic(
    tmp_path: Path, envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    v1 = await upstream_factory("reviews-v1")
    v2 = await upstream_factory("reviews-v2")
    listen = free_port()
    async with FakeApiServer(token="pilothouse-test", bookmark_interval=0.5) as api:
        api.create(
            service("reviews", NAMESPACE, 9080, [(v1, {"version": "v1"}), (v2, {"version": "v2"})])
        )
        api.create(
            destination_rule(
                "reviews", NAMESPACE, {"v1": {"version": "v1"}, "v2": {"version": "v2"}}
            )
        )
        api.create(gateway(NAMESPACE, listen))
        api.create(routes_to("v2"))
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        plane = serve_kubernetes(kubeconfig, tmp_path / "serve.log")
        try:
            await plane.wait_ready(timeout=60)
            await envoy_factory(gateway_bootstrap(NAMESPACE, plane.xds_port, XdsTransport.SOTW))
            await wait_for_port(listen, timeout=20)
            assert await upstreams_seen(listen) == {"ok": 20, "reviews-v2": 20}, plane.log_tail()

            # A watched edit moves the traffic.
            api.apply(routes_to("v1"))
            await eventually(lambda: _only(listen, "reviews-v1"))

            # The watch drops, the routes change, the history is compacted: serve gets a
            # 410 Gone when it comes back, lists again, and still sees the change.
            lists_before = _lists(api)
            api.drop_watches()
            api.apply(routes_to("v2"))
            api.compact()
            await eventually(lambda: _only(listen, "reviews-v2"))
            assert _lists(api) > lists_before

            # Deleting the VirtualService removes its routes: the gateway answers 404.
            api.delete(VS, NAMESPACE, "reviews")
            await eventually(lambda: _status(listen, 404))
            # Without --write-status, serve wrote nothing to the API server but the CA's
            # root (the TLS port is on: tests/conftest.py).
            writes = {(r.method, r.path) for r in api.requests if r.method != "GET"}
            assert writes == {("POST", "/api/v1/namespaces/istio-system/secrets")}
        finally:
            await plane.stop()
    log = (tmp_path / "serve.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
    assert "expired (410 Gone)" in log, log[-3000:]


def _lists(api: FakeApiServer) -> int:
    return sum(
        1 for r in api.requests if r.path.endswith("/virtualservices") and "watch" not in r.query
    )


async def _only(port: int, upstream: str) -> bool | dict[str, int]:
    seen = await upstreams_seen(port, 10)
    return seen == {"ok": 10, upstream: 10} or seen


async def _status(port: int, status: int) -> bool | int:
    response = await fetch(LOOPBACK, port, "/")
    return response.status == status or response.status


async def test_kubernetes_service_and_pods_through_serve_and_the_api_server(
    tmp_path: Path, envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    """The whole Kubernetes path in one real ``serve`` process: Istio custom resources
    through the ``k8s://`` source, and a Kubernetes Service with an EndpointSlice per Pod
    (two ready Pods on nodes in two zones) through the service registry's informers, all
    from the fake API server. The gateway routes by subset (the Pods' labels); Envoy's
    hosts carry the Nodes' zones; a Pod turning unready leaves by EDS alone (Envoy's CDS
    and LDS counters stay put); deleting the VirtualService removes its routes."""
    v1 = await upstream_factory("reviews-v1")
    v2 = await upstream_factory("reviews-v2")
    listen = free_port()
    reviews = fqdn("reviews", NAMESPACE)
    cluster_name = f"outbound|9080||{reviews}"
    async with FakeApiServer(token="pilothouse-test", bookmark_interval=0.5) as api:
        api.create(kube.namespace(NAMESPACE))
        api.create(kube.node("node-a", "eu-west1", "eu-west1-b"))
        api.create(kube.node("node-b", "eu-west1", "eu-west1-c"))
        api.create(
            kube.service(
                "reviews", NAMESPACE, [{"name": "http-web", "port": 9080}],
                selector={"app": "reviews"}, cluster_ip="10.96.3.7",
            )
        )  # fmt: skip
        for version, upstream, on_node in (("v1", v1, "node-a"), ("v2", v2, "node-b")):
            api.create(_reviews_pod(version, upstream.host, on_node, ready=True))
            api.create(_reviews_slice(version, upstream.host, upstream.port, ready=True))
        api.create(
            destination_rule(
                "reviews", NAMESPACE, {"v1": {"version": "v1"}, "v2": {"version": "v2"}}
            )
        )
        api.create(gateway(NAMESPACE, listen))
        api.create(
            virtual_service(
                "reviews",
                NAMESPACE,
                [
                    {"match": [{"uri": {"prefix": "/v1"}}], "route": [to(reviews, "v1")]},
                    {"match": [{"uri": {"prefix": "/v2"}}], "route": [to(reviews, "v2")]},
                    {"route": [to(reviews)]},
                ],
            )
        )
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        plane = serve_kubernetes(kubeconfig, tmp_path / "serve.log")
        try:
            await plane.wait_ready(timeout=60)
            envoy = await envoy_factory(
                gateway_bootstrap(NAMESPACE, plane.xds_port, XdsTransport.SOTW)
            )
            await wait_for_port(listen, timeout=20)
            only_v1 = await send_requests(LOOPBACK, listen, 10, path="/v1/x")
            only_v2 = await send_requests(LOOPBACK, listen, 10, path="/v2/x")
            assert only_v1.upstreams == {"reviews-v1": 10}, plane.log_tail()
            assert only_v2.upstreams == {"reviews-v2": 10}, plane.log_tail()
            assert await _localities(envoy, cluster_name) == {
                v1.port: "eu-west1/eu-west1-b",
                v2.port: "eu-west1/eu-west1-c",
            }

            cds = await envoy.stat("cluster_manager.cds.update_success")
            lds = await envoy.stat("listener_manager.lds.update_success")
            eds = await envoy.stat(f"cluster.{cluster_name}.update_success")
            api.apply(_reviews_pod("v2", v2.host, "node-b", ready=False))
            api.apply(_reviews_slice("v2", v2.host, v2.port, ready=False))
            await envoy.wait_stat(f"cluster.{cluster_name}.update_success", eds + 1, timeout=20)
            await eventually(lambda: _ports_are(envoy, cluster_name, {v1.port}))
            after = await send_requests(LOOPBACK, listen, 20)
            assert after.upstreams == {"reviews-v1": 20}, after.summary()
            assert await envoy.stat("cluster_manager.cds.update_success") == cds
            assert await envoy.stat("listener_manager.lds.update_success") == lds

            api.delete(VS, NAMESPACE, "reviews")
            await eventually(lambda: _status(listen, 404))
        finally:
            await plane.stop()
    log = (tmp_path / "serve.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


def _reviews_pod(version: str, host: str, on_node: str, *, ready: bool) -> dict[str, Any]:
    return kube.pod(
        f"reviews-{version}", NAMESPACE, host, {"app": "reviews", "version": version},
        service_account="reviews", node=on_node, ready=ready,
    )  # fmt: skip


def _reviews_slice(version: str, host: str, port: int, *, ready: bool) -> dict[str, Any]:
    return kube.endpoint_slice(
        f"reviews-{version}", NAMESPACE, "reviews", [("http-web", port)],
        [(host, f"reviews-{version}", ready)],
    )  # fmt: skip


async def _localities(envoy: EnvoyProcess, cluster_name: str) -> dict[int, str]:
    """The ports of a cluster's hosts, each with its locality as ``region/zone``."""
    statuses = (await envoy.clusters_json())["cluster_statuses"]
    (found,) = [c for c in statuses if c["name"] == cluster_name]
    out: dict[int, str] = {}
    for host in found.get("host_statuses", ()):
        locality = host.get("locality", {})
        port = host["address"]["socket_address"]["port_value"]
        out[port] = f"{locality.get('region', '')}/{locality.get('zone', '')}"
    return out


async def _ports_are(envoy: EnvoyProcess, cluster_name: str, ports: set[int]) -> bool | set[int]:
    held = set(await _localities(envoy, cluster_name))
    return held == ports or held
