"""``--write-status`` for the Gateway API against the fake API server (a fake: no real API
server can run here): Gateway API objects listed from Kubernetes, a discovery server over
them, and :class:`GatewayApiStatusWriter` merging their conditions into each object's
``status`` (with times), once per change."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pilothouse.cli.serve_status import GatewayApiStatusWriter
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.test_config_source import Running, api, obj, source, until

__all__ = ["api"]
GW = {"group": "gateway.networking.k8s.io", "version": "v1"}
ROUTES = "httproutes.gateway.networking.k8s.io"
GATEWAYS = "gateways.gateway.networking.k8s.io"


def _route(backend_namespace: str) -> dict[str, Any]:
    rule = {"backendRefs": [{"name": "app", "namespace": backend_namespace, "port": 80}]}
    return obj("HTTPRoute", "r", "edge", {"parentRefs": [{"name": "web"}], "rules": [rule]}, **GW)


async def test_conditions_are_written_back_when_they_change(
    api: FakeApiServer, tmp_path: Path
) -> None:
    listener = {"name": "http", "port": 8080, "protocol": "HTTP"}
    api.create(
        obj("Gateway", "web", "edge", {"gatewayClassName": "istio", "listeners": [listener]}, **GW)
    )
    api.create(_route("shop"))  # another namespace, no ReferenceGrant
    async with Running(source(api, tmp_path, write_status=True)) as kube:
        discovery = DiscoveryServer(kube.store)
        serving = asyncio.create_task(discovery.run())
        try:
            await asyncio.wait_for(discovery.wait_ready(), 10)
            writer = GatewayApiStatusWriter(DiscoveryDebugView(discovery), [kube])
            assert sorted(k.name for k in writer.write_changed()) == ["r", "web"]

            def status(resource: str, name: str) -> dict[str, Any]:
                found = api.get(resource, "edge", name)
                return dict((found or {}).get("status") or {})

            await until(lambda: bool(status(ROUTES, "r").get("parents")))
            (parent,) = status(ROUTES, "r")["parents"]
            assert parent["controllerName"] == "istio.io/gateway-controller"
            resolved = {c["type"]: c for c in parent["conditions"]}["ResolvedRefs"]
            assert (resolved["status"], resolved["reason"]) == ("False", "RefNotPermitted")
            assert resolved["lastTransitionTime"].endswith("Z")
            await until(lambda: bool(status(GATEWAYS, "web").get("listeners")))
            assert status(GATEWAYS, "web")["listeners"][0]["attachedRoutes"] == 1
            # Nothing changed: nothing written again.
            assert writer.write_changed() == []
            # The route moves its backend home: the next context's status is written.
            api.apply(_route("edge"))

            def resolved_now() -> str:
                parents = status(ROUTES, "r").get("parents") or [{"conditions": []}]
                found = {c["type"]: c["reason"] for c in parents[0]["conditions"]}
                return found.get("ResolvedRefs", "")

            async def rewritten() -> None:
                while resolved_now() != "BackendNotFound":
                    writer.write_changed()
                    await asyncio.sleep(0.02)

            await asyncio.wait_for(rewritten(), 10)  # no Service app in edge: not found
        finally:
            discovery.close()
            await asyncio.wait_for(serving, 10)
    writes = [r for r in api.requests if r.method == "PATCH"]
    assert writes and all(r.path.endswith("/status") for r in writes)
