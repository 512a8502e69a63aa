"""Make before break under load: route switches to brand-new subsets cost no request.

A real Envoy gateway carries continuous traffic while the route is switched 20 times
to a subset that did not exist a moment before, and back (each switch adds the subset
and points the VirtualService at it in one config change; switching back removes it).
Every request must succeed: no 5xx (``no_cluster`` while a cluster warms or after it
is removed) and no connection error.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import free_port, wait_for_port
from tests.e2e.harness.upstreams import UpstreamPool

SWITCHES = 20


def mesh(gateway_port: int, upstream_port: int, subset: str) -> str:
    subsets = ["base"] if subset == "base" else ["base", subset]
    listed = ", ".join(f"{{name: {s}, labels: {{app: web}}}}" for s in subsets)
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: web, namespace: edge}}
spec:
  hosts: [web.edge.svc.cluster.local]
  resolution: STATIC
  ports: [{{number: 80, name: http, protocol: HTTP}}]
  endpoints: [{{address: 127.0.0.1, ports: {{http: {upstream_port}}}, labels: {{app: web}}}}]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {{name: gw, namespace: edge}}
spec:
  selector: {{istio: ingressgateway}}
  servers:
  - port: {{number: {gateway_port}, name: http, protocol: HTTP}}
    bind: 127.0.0.1
    hosts: ["*"]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: web, namespace: edge}}
spec:
  host: web.edge.svc.cluster.local
  subsets: [{listed}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: web, namespace: edge}}
spec:
  hosts: ["*"]
  gateways: [gw]
  http:
  - route: [{{destination: {{host: web.edge.svc.cluster.local, subset: {subset}}}}}]
"""


@pytest.mark.parametrize("transport", [XdsTransport.SOTW, XdsTransport.DELTA])
async def test_switching_routes_to_new_subsets_loses_no_request(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool, transport: XdsTransport
) -> None:
    upstream = await upstream_factory("web")
    gateway_port = free_port()
    plane = ControlPlane()
    plane.apply_yaml(mesh(gateway_port, upstream.port, "base"))
    await plane.start()
    try:
        options = EnvoyBootstrapOptions(
            node_id="router~127.0.0.1~gw-1.edge~edge.svc.cluster.local",
            node_metadata={"LABELS": {"istio": "ingressgateway"}},
            xds_port=plane.port,
            admin_port=0,
            transport=transport,
        )
        await envoy_factory(envoy_bootstrap(options))
        await wait_for_port(gateway_port, timeout=30)
        statuses: Counter[int | None] = Counter()
        errors: list[str] = []
        odd: list[str] = []  # the first non-200 answers, with their bodies (Envoy's why)
        stop = asyncio.Event()

        async def load() -> None:
            while not stop.is_set():
                report = await send_requests(
                    "127.0.0.1", gateway_port, 20, keep_alive=False, concurrency=4
                )
                statuses.update(report.statuses)
                errors.extend(report.errors)
                odd.extend(
                    f"{r.status} {r.body[:100]!r}"
                    for r in report.results
                    if r.status not in (200, None)
                )
                del odd[5:]

        traffic = asyncio.create_task(load())
        # At least SWITCHES switches, and on until the traffic has reached the count the
        # check below asks for (a busy machine sends fewer requests per switch).
        index = 0
        async with asyncio.timeout(60):
            while index < SWITCHES or sum(statuses.values()) < 2000:
                plane.apply_yaml(mesh(gateway_port, upstream.port, f"v{index}"))
                await asyncio.sleep(0.15)
                plane.apply_yaml(mesh(gateway_port, upstream.port, "base"))
                await asyncio.sleep(0.15)
                index += 1
        await asyncio.sleep(0.3)
        stop.set()
        await traffic
    finally:
        await plane.stop()
    total = sum(statuses.values())
    assert total >= 2000, f"only {total} requests were sent"
    assert set(statuses) == {200}, f"non-200 answers: {statuses}: {odd}"
    assert errors == []
