"""AuthorizationPolicy on a gateway: a real Envoy ingress gateway carrying real HTTP.

An in-process pilothouse serves a gateway (``istio: ingressgateway``) routing every path
to one upstream. Policies selecting the gateway's workload are enforced by its own RBAC
filters: a DENY on ``/admin*`` refuses those requests with 403 and lets the rest through;
an ALLOW for GET only then refuses a POST; deleting both brings every request back. A
policy in another namespace, or one whose selector does not match the gateway, changes
nothing.
"""

from __future__ import annotations

import asyncio
import time

from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.client import fetch
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    GATEWAY_LABELS,
    fqdn,
    gateway,
    render,
    serve,
    service,
    start_gateway,
    to,
    virtual_service,
)
from tests.integration.push_settled import quiet, released, released_since

NS = "edge"
KIND = "AuthorizationPolicy"


def policy(name: str, namespace: str, selector: dict[str, str], spec: dict[str, object]) -> str:
    body = {"selector": {"matchLabels": selector}, **spec}
    return render(
        {
            "apiVersion": "security.istio.io/v1",
            "kind": KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": body,
        }
    )


async def statuses(port: int) -> dict[str, int]:
    """The status of a GET /, a GET /admin/x and a POST / through the gateway."""
    home = await fetch(LOOPBACK, port, "/")
    admin = await fetch(LOOPBACK, port, "/admin/x")
    post = await fetch(LOOPBACK, port, "/", method="POST", body=b"x")
    return {"GET /": home.status, "GET /admin/x": admin.status, "POST /": post.status}


async def settle(port: int, expected: dict[str, int], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    seen = await statuses(port)
    while seen != expected:
        assert time.monotonic() < deadline, f"expected {expected}, the gateway answers {seen}"
        await asyncio.sleep(0.1)
        seen = await statuses(port)


async def test_gateway_policies_deny_then_allow_then_nothing(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    app = await upstream_factory("web")
    listen = free_port()
    plane = await serve(
        render(
            service("web", NS, 8080, [(app, {"app": "web"})]),
            gateway(NS, listen),
            virtual_service("web", NS, [{"route": [to(fqdn("web", NS))]}]),
        )
    )
    try:
        await start_gateway(envoy_factory, plane, NS, listen, XdsTransport.SOTW)
        open_doors = {"GET /": 200, "GET /admin/x": 200, "POST /": 200}
        await settle(listen, open_doors)

        # policies that do not select the gateway change nothing
        elsewhere = {"to": [{"operation": {"paths": ["/admin*"]}}]}
        triggers = released(plane)
        plane.apply_yaml(policy("other-ns", "shop", dict(GATEWAY_LABELS), {"action": "DENY",
                                "rules": [elsewhere]}))  # fmt: skip
        plane.apply_yaml(policy("other-app", NS, {"app": "web"}, {"action": "DENY",
                                "rules": [elsewhere]}))  # fmt: skip
        await released_since(plane, triggers, changes=2)
        await quiet(plane)  # whatever the two pushed, the gateway has taken (ACKed)
        assert await statuses(listen) == open_doors

        # DENY /admin* on the gateway's workload
        plane.apply_yaml(
            policy("no-admin", NS, dict(GATEWAY_LABELS), {"action": "DENY", "rules": [elsewhere]})
        )
        await settle(listen, {"GET /": 200, "GET /admin/x": 403, "POST /": 200})

        # an ALLOW for GET: what it does not match is refused, the DENY still wins
        plane.apply_yaml(
            policy("read-only", NS, dict(GATEWAY_LABELS),
                   {"action": "ALLOW", "rules": [{"to": [{"operation": {"methods": ["GET"]}}]}]})
        )  # fmt: skip
        await settle(listen, {"GET /": 200, "GET /admin/x": 403, "POST /": 403})

        plane.delete(KIND, NS, "read-only")
        plane.delete(KIND, NS, "no-admin")
        await settle(listen, open_doors)
    finally:
        await plane.stop()
