"""A sidecar without iptables: its Sidecar egress listener on 127.0.0.1 routes by Host header.

The namespace's ``Sidecar`` has one egress listener (``bind: 127.0.0.1``,
``captureMode: NONE``, ``hosts: ["./*"]``) on port P, and two services listen on P
with different upstreams.  The sidecar Envoy must listen on 127.0.0.1:P itself and send
each request to the service its ``Host`` names, in any form a client of the namespace
may write it (FQDN, short name, with the port).
"""

from __future__ import annotations

import pytest

from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.client import send_requests
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    TRANSPORTS,
    fqdn,
    render,
    serve,
    service,
    sidecar,
    start_sidecar,
)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_egress_listener_routes_by_host_header(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool, transport: XdsTransport
) -> None:
    namespace, port = "egress", free_port()
    a = await upstream_factory("svc-a")
    b = await upstream_factory("svc-b")
    other = await upstream_factory("elsewhere")
    mesh = render(
        service("svc-a", namespace, port, [(a, {"app": "svc-a"})]),
        service("svc-b", namespace, port, [(b, {"app": "svc-b"})]),
        # a service of another namespace, which ./* does not import
        service("svc-a", "other", port, [(other, {"app": "svc-a"})]),
        sidecar(namespace, port),
    )
    plane = await serve(mesh)
    try:
        await start_sidecar(envoy_factory, plane, namespace, port, transport)
        seen = {}
        for host in (
            fqdn("svc-a", namespace),
            "svc-a",
            f"svc-a:{port}",
            f"svc-a.{namespace}",
            fqdn("svc-b", namespace),
            "svc-b",
            f"{fqdn('svc-b', namespace)}:{port}",
        ):
            report = await send_requests(LOOPBACK, port, 5, authority=host)
            seen[host] = dict(report.upstreams)
            assert report.ok == 5, f"Host {host}: {report.summary()}"
        unknown = await send_requests(LOOPBACK, port, 2, authority=fqdn("svc-a", "other"))
    finally:
        await plane.stop()
    assert seen == {
        fqdn("svc-a", namespace): {"svc-a": 5},
        "svc-a": {"svc-a": 5},
        f"svc-a:{port}": {"svc-a": 5},
        f"svc-a.{namespace}": {"svc-a": 5},
        fqdn("svc-b", namespace): {"svc-b": 5},
        "svc-b": {"svc-b": 5},
        f"{fqdn('svc-b', namespace)}:{port}": {"svc-b": 5},
    }
    assert (a.requests, b.requests) == (20, 15)
    # a host outside the egress listener's hosts never reaches that service's upstream
    assert other.requests == 0, unknown.summary()
