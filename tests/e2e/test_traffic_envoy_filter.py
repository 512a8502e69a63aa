"""EnvoyFilters changing what a real Envoy does: the gateway and a sidecar's inbound.

Real HTTP through the module's gateway Envoy (one per ADS flavour) and through a
sidecar Envoy's inbound listener. Each gateway test puts its EnvoyFilters in the root
namespace (where the gateway proxy lives), matched to its own Gateway port, so tests
never patch each other's listeners:

- a Lua HTTP_FILTER inserted before the router adds a response header, on the gateway
  and on a sidecar's inbound listener (whose inline routes a VIRTUAL_HOST MERGE patches
  too); deleting the EnvoyFilter takes it away again;
- two filters inserting before the router run in priority order;
- a CLUSTER MERGE shows in Envoy's ``/config_dump``;
- a VIRTUAL_HOST MERGE adds a response header;
- an HTTP_FILTER REMOVE of the fault filter lets requests a fault would abort through;
- an EnvoyFilter with an unknown ``@type`` is refused by validation and never reaches
  Envoy;
- on a capturing sidecar's ``virtualOutbound``, ``portNumber`` picks the filter chain of
  that destination port (checked in Envoy's ``/config_dump``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.problems import ConfigError
from pilothouse.kinds.table import SCHEMAS
from tests.e2e.harness.client import fetch
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.shared_gateway import GATEWAY_NAMESPACE, GatewayTurn
from tests.e2e.traffic_mesh import fqdn, gateway, prefix, render, service, to, virtual_service

pytestmark = pytest.mark.asyncio(loop_scope="module")

HCM = "envoy.filters.network.http_connection_manager"
ROUTER = "envoy.filters.http.router"
LUA = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"
TIMEOUT = 15.0


def lua_header(header: str, value: str) -> dict[str, Any]:
    code = f'function envoy_on_response(h) h:headers():add("{header}", "{value}") end'
    return {
        "name": f"lua.{header}.{value}",
        "typed_config": {"@type": LUA, "default_source_code": {"inline_string": code}},
    }


def envoy_filter(
    name: str, patches: list[dict[str, Any]], *, namespace: str = GATEWAY_NAMESPACE, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "networking.istio.io/v1alpha3",
        "kind": "EnvoyFilter",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"configPatches": patches, **spec},
    }


def before_router(port: int, value: dict[str, Any], context: str = "GATEWAY") -> dict[str, Any]:
    return {
        "applyTo": "HTTP_FILTER",
        "match": {
            "context": context,
            "listener": {
                "portNumber": port,
                "filterChain": {"filter": {"name": HCM, "subFilter": {"name": ROUTER}}},
            },
        },
        "patch": {"operation": "INSERT_BEFORE", "value": value},
    }


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.1)


def web_mesh(namespace: str, port: int, web: Any, **route: Any) -> list[dict[str, Any]]:
    host = fqdn("web", namespace)
    return [
        service("web", namespace, 8000, [(web, {})]),
        gateway(namespace, port),
        virtual_service("web", namespace, [{**route, "route": [to(host)]}]),
    ]


async def header_of(port: int, name: str, path: str = "/") -> str | None:
    response = await fetch(LOOPBACK, port, path)
    assert response.status == 200, response
    return response.header(name)


def http_filters(dump: dict[str, Any], port: int) -> list[str]:
    """The HTTP filter names of the active listener on ``port``, from a config dump."""
    for config in dump["configs"]:
        for entry in config.get("dynamic_listeners", []):
            listener = entry.get("active_state", {}).get("listener", {})
            address = listener.get("address", {}).get("socket_address", {})
            if address.get("port_value") != port:
                continue
            for chain in listener.get("filter_chains", []):
                for found in chain.get("filters", []):
                    if found["name"] == HCM:
                        return [f["name"] for f in found["typed_config"]["http_filters"]]
    return []


async def test_lua_before_the_router_adds_a_header_and_deleting_the_filter_restores(
    gateway_turn: GatewayTurn,
) -> None:
    namespace, port = "ef-lua", free_port()
    web = await gateway_turn.upstream("web")
    lua = envoy_filter(
        "ef-lua",
        [before_router(port, lua_header("x-lua", "gateway"))],
        workloadSelector={"labels": {"istio": "ingressgateway"}},
    )
    shared = gateway_turn.gateway
    async with gateway_turn.serving(render(*web_mesh(namespace, port, web)), port):
        assert await header_of(port, "x-lua") is None
        keys = shared.apply(render(lua))

        async def patched() -> bool:
            return await header_of(port, "x-lua") == "gateway"

        await eventually(patched, "the Lua filter adds its header")
        shared.delete(keys)

        async def restored() -> bool:
            return await header_of(port, "x-lua") is None

        await eventually(restored, "the header is gone with the EnvoyFilter")


async def test_two_filters_run_in_priority_order(gateway_turn: GatewayTurn) -> None:
    namespace, port = "ef-order", free_port()
    web = await gateway_turn.upstream("web")
    late = envoy_filter("ef-order-late", [before_router(port, lua_header("x-order", "late"))])
    late["spec"]["priority"] = 10
    early = envoy_filter("ef-order-early", [before_router(port, lua_header("x-order", "early"))])
    early["spec"]["priority"] = -10
    mesh = render(*web_mesh(namespace, port, web), late, early)
    envoy = gateway_turn.gateway.envoy
    assert envoy is not None
    async with gateway_turn.serving(mesh, port):

        async def both() -> bool:
            names = http_filters(await envoy.config_dump(), port)
            return "lua.x-order.late" in names and "lua.x-order.early" in names

        await eventually(both, "both Lua filters are in the listener")
        names = http_filters(await envoy.config_dump(), port)
        # each inserts before the router: the one applied first ends up first
        assert names[-3:] == ["lua.x-order.early", "lua.x-order.late", ROUTER]
        response = await fetch(LOOPBACK, port, "/")
        values = [v for k, v in response.headers if k.lower() == "x-order"]
        assert sorted(values) == ["early", "late"]


async def test_cluster_merge_shows_in_the_config_dump(gateway_turn: GatewayTurn) -> None:
    namespace, port = "ef-cluster", free_port()
    web = await gateway_turn.upstream("web")
    cluster = f"outbound|8000||{fqdn('web', namespace)}"
    merge = envoy_filter(
        "ef-cluster",
        [
            {
                "applyTo": "CLUSTER",
                "match": {"context": "GATEWAY", "cluster": {"name": cluster}},
                "patch": {
                    "operation": "MERGE",
                    "value": {"per_connection_buffer_limit_bytes": 12345},
                },
            }
        ],
    )
    envoy = gateway_turn.gateway.envoy
    assert envoy is not None
    async with gateway_turn.serving(render(*web_mesh(namespace, port, web), merge), port):

        async def merged() -> bool:
            for config in (await envoy.config_dump())["configs"]:
                for entry in config.get("dynamic_active_clusters", []):
                    found = entry["cluster"]
                    if found["name"] == cluster:
                        return bool(found.get("per_connection_buffer_limit_bytes") == 12345)
            return False

        await eventually(merged, "the cluster carries the merged buffer limit")
        assert (await fetch(LOOPBACK, port, "/")).status == 200


async def test_virtual_host_merge_adds_a_response_header(gateway_turn: GatewayTurn) -> None:
    namespace, port = "ef-vhost", free_port()
    web = await gateway_turn.upstream("web")
    merge = envoy_filter(
        "ef-vhost",
        [
            {
                "applyTo": "VIRTUAL_HOST",
                "match": {"context": "GATEWAY", "routeConfiguration": {"portNumber": port}},
                "patch": {
                    "operation": "MERGE",
                    "value": {
                        "response_headers_to_add": [{"header": {"key": "x-vhost", "value": "on"}}]
                    },
                },
            }
        ],
    )
    async with gateway_turn.serving(render(*web_mesh(namespace, port, web), merge), port):

        async def patched() -> bool:
            return await header_of(port, "x-vhost") == "on"

        await eventually(patched, "the virtual host adds its header")


async def test_removing_the_fault_filter_lets_aborted_requests_through(
    gateway_turn: GatewayTurn,
) -> None:
    namespace, port = "ef-remove", free_port()
    web = await gateway_turn.upstream("web")
    abort = {"abort": {"httpStatus": 429, "percentage": {"value": 100}}}
    mesh = web_mesh(namespace, port, web, fault=abort, match=prefix("/"))
    remove = envoy_filter(
        "ef-remove",
        [
            {
                "applyTo": "HTTP_FILTER",
                "match": {
                    "context": "GATEWAY",
                    "listener": {
                        "portNumber": port,
                        "filterChain": {
                            "filter": {
                                "name": HCM,
                                "subFilter": {"name": "envoy.filters.http.fault"},
                            }
                        },
                    },
                },
                "patch": {"operation": "REMOVE"},
            }
        ],
    )
    shared = gateway_turn.gateway
    async with gateway_turn.serving(render(*mesh), port):
        assert (await fetch(LOOPBACK, port, "/")).status == 429
        keys = shared.apply(render(remove))

        async def through() -> bool:
            return (await fetch(LOOPBACK, port, "/")).status == 200

        await eventually(through, "requests pass without the fault filter")
        shared.delete(keys)


async def test_an_unknown_type_is_refused_and_never_sent(gateway_turn: GatewayTurn) -> None:
    namespace, port = "ef-bad", free_port()
    web = await gateway_turn.upstream("web")
    bad_value = {"name": "bad", "typed_config": {"@type": "type.googleapis.com/envoy.NoSuch"}}
    bad = envoy_filter("ef-bad", [before_router(port, bad_value)])
    with pytest.raises(ConfigError, match=r"spec.configPatches\[0\].patch.value.typed_config"):
        Loader(SCHEMAS, source="test").load_strict(render(bad), "bad.yaml")
    envoy = gateway_turn.gateway.envoy
    assert envoy is not None
    async with gateway_turn.serving(render(*web_mesh(namespace, port, web)), port):
        assert "bad" not in http_filters(await envoy.config_dump(), port)
        assert (await fetch(LOOPBACK, port, "/")).status == 200


async def test_lua_on_a_sidecar_inbound_listener(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> None:
    app = await upstream_factory("app")
    inbound = free_port()
    plane = ControlPlane()
    plane.apply_yaml(
        f"""\
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
kind: Sidecar
metadata: {{name: app, namespace: shop}}
spec:
  workloadSelector: {{labels: {{app: shop-app}}}}
  ingress:
  - port: {{number: {inbound}, protocol: HTTP, name: http}}
    bind: 127.0.0.1
    defaultEndpoint: 127.0.0.1:{app.port}
  egress: [{{hosts: ["./*"]}}]
---
"""
        + render(
            envoy_filter(
                "inbound-lua",
                [
                    before_router(inbound, lua_header("x-lua", "inbound"), "SIDECAR_INBOUND"),
                    {
                        "applyTo": "VIRTUAL_HOST",
                        "match": {
                            "context": "SIDECAR_INBOUND",
                            "routeConfiguration": {"portNumber": inbound},
                        },
                        "patch": {
                            "operation": "MERGE",
                            "value": {
                                "response_headers_to_add": [
                                    {"header": {"key": "x-inbound-vhost", "value": "on"}}
                                ]
                            },
                        },
                    },
                ],
                namespace="shop",
                workloadSelector={"labels": {"app": "shop-app"}},
            )
        )
    )
    await plane.start()
    try:
        options = EnvoyBootstrapOptions(
            node_id="sidecar~127.0.0.1~app-1.shop~shop.svc.cluster.local",
            node_metadata={"LABELS": {"app": "shop-app"}},
            xds_port=plane.port,
            admin_port=0,
            transport=XdsTransport.DELTA,
        )
        envoy: EnvoyProcess = await envoy_factory(envoy_bootstrap(options))
        await wait_for_port(inbound, timeout=10)
        assert await header_of(inbound, "x-lua") == "inbound"
        assert await header_of(inbound, "x-inbound-vhost") == "on"  # the inline routes
        plane.delete("EnvoyFilter", "shop", "inbound-lua")

        async def restored() -> bool:
            response = await fetch(LOOPBACK, inbound, "/")
            return response.header("x-lua") is None and response.header("x-inbound-vhost") is None

        await eventually(restored, "the inbound header is gone with the EnvoyFilter")
        assert f"inbound|{inbound}||" in {
            s["name"] for s in (await envoy.clusters_json())["cluster_statuses"]
        }
    finally:
        await plane.stop()


async def test_port_number_on_virtual_outbound_picks_the_chain_of_that_port(
    envoy_factory: EnvoyFleet,
) -> None:
    """On ``virtualOutbound`` (a sidecar that says it captures traffic), ``portNumber``
    picks the filter chain whose destination port it is: the network filter goes into
    the chain for the listener's own port only, not the catch-all, and Envoy takes it."""
    listen = free_port()
    plane = ControlPlane()
    rbac = "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"
    plane.apply_yaml(
        render(
            envoy_filter(
                "virtual-port",
                [
                    {
                        "applyTo": "NETWORK_FILTER",
                        "match": {
                            "context": "SIDECAR_OUTBOUND",
                            "listener": {
                                "name": "virtualOutbound",
                                "portNumber": listen,
                                "filterChain": {
                                    "filter": {"name": "envoy.filters.network.tcp_proxy"}
                                },
                            },
                        },
                        "patch": {
                            "operation": "INSERT_BEFORE",
                            "value": {
                                "name": "envoy.filters.network.rbac",
                                "typed_config": {"@type": rbac, "stat_prefix": "ef_port"},
                            },
                        },
                    }
                ],
                namespace="shop",
            )
        )
    )
    await plane.start()
    try:
        assert plane.discovery is not None
        plane.discovery.set_mesh(dataclasses.replace(MeshSettings(), proxy_listen_port=listen))
        options = EnvoyBootstrapOptions(
            node_id="sidecar~127.0.0.1~cap-1.shop~shop.svc.cluster.local",
            node_metadata={"INTERCEPTION_MODE": "REDIRECT"},
            xds_port=plane.port,
            admin_port=0,
            transport=XdsTransport.DELTA,
        )
        envoy: EnvoyProcess = await envoy_factory(envoy_bootstrap(options))
        await wait_for_port(listen, timeout=10)  # Envoy took the patched listener

        async def chains() -> list[list[str]]:
            for config in (await envoy.config_dump())["configs"]:
                for entry in config.get("dynamic_listeners", []):
                    active = entry.get("active_state", {}).get("listener", {})
                    if entry["name"] == "virtualOutbound":
                        return [
                            [f["name"] for f in chain.get("filters", [])]
                            for chain in active.get("filter_chains", [])
                        ]
            return []

        async def patched() -> bool:
            return bool(await chains())

        await eventually(patched, "virtualOutbound is active")
        own_port, catch_all = await chains()
        assert own_port == ["envoy.filters.network.rbac", "envoy.filters.network.tcp_proxy"]
        assert catch_all == ["envoy.filters.network.tcp_proxy"]
    finally:
        await plane.stop()
