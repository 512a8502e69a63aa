"""Generated routes use no field Envoy has deprecated.

Envoy 1.40 logs a warning and counts ``runtime.deprecated_feature_use`` for every
deprecated field it receives (``RouteAction.max_grpc_timeout`` was one: istiod's form,
which pilothouse now writes too, is ``max_stream_duration.grpc_timeout_header_max``).
"""

from __future__ import annotations

from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.client import fetch
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    fqdn,
    gateway,
    render,
    serve,
    service,
    start_gateway,
    to,
    virtual_service,
)


async def test_generated_routes_use_no_deprecated_envoy_field(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    # transport-independent (it is about the route content), so SotW only
    namespace, port = "deprecated", free_port()
    web = await upstream_factory("web")
    mesh = render(
        service("web", namespace, 8000, [(web, {})]),
        gateway(namespace, port),
        virtual_service("web", namespace, [{"route": [to(fqdn("web", namespace))]}]),
    )
    plane = await serve(mesh)
    try:
        envoy = await start_gateway(envoy_factory, plane, namespace, port, XdsTransport.SOTW)
        assert (await fetch(LOOPBACK, port, "/")).status == 200
        used = await envoy.stat("runtime.deprecated_feature_use", default=0)
    finally:
        await plane.stop()
    assert used == 0, f"Envoy counted {used} use(s) of deprecated fields; see its log"
