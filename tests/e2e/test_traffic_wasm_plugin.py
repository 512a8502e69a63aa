"""WasmPlugins changing what a real Envoy does, over ECDS (SotW and delta).

One pilothouse and one gateway Envoy per ADS transport for the module (its own fixture:
the control plane may fetch modules from loopback). The module is the WAT in
``tests/e2e/wasm/`` (assembled by ``wat2wasm`` when present, else the checked-in bytes):
it adds ``x-wasm: pilothouse`` to every response. The Envoy wheel has the V8 runtime,
so the tests look at real responses:

- a plugin from ``file://`` adds the header, the listener names it through an ECDS
  filter before the router and Envoy holds the extension config; deleting the plugin
  takes the header away;
- a plugin from ``http://`` (a local server; loopback opted in) is fetched once;
- an edit whose module does not match its ``sha256`` is not served: the mismatch is
  counted and the last good module keeps answering; a matching module then replaces it;
- a NETWORK plugin loads as a network filter before the HCM (Envoy takes the listener,
  requests still flow);
- an EnvoyFilter that inserts a filter loading its config over ECDS and ADDs that config
  (``applyTo: EXTENSION_CONFIG``) runs it (a Lua filter adding a header).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from pilothouse.bootstrap.envoy import XdsTransport
from pilothouse.security.wasm_modules import CHECKSUM_MISMATCH, OK
from tests.e2e.harness.client import fetch
from tests.e2e.harness.control_plane import FAST, ControlPlane
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.wasm_module import HEADER, add_header_module, with_header_value
from tests.e2e.shared_gateway import GATEWAY_NAMESPACE, GatewayTurn, SharedGateway
from tests.e2e.traffic_mesh import TRANSPORTS, fqdn, gateway, render, service, to, virtual_service

pytestmark = pytest.mark.asyncio(loop_scope="module")

HCM = "envoy.filters.network.http_connection_manager"
ROUTER = "envoy.filters.http.router"
TIMEOUT = 15.0


@pytest_asyncio.fixture(
    scope="module", loop_scope="module", params=TRANSPORTS, ids=[t.value for t in TRANSPORTS]
)
async def gateway_envoy(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[SharedGateway]:
    """The module's pilothouse (modules may come from loopback) and gateway Envoy."""
    transport: XdsTransport = request.param
    fleet = EnvoyFleet(tmp_path_factory.mktemp(f"wasm-{transport.value}"))
    plane = ControlPlane(settings=dataclasses.replace(FAST, wasm_allowed_hosts=("127.0.0.1",)))
    shared = SharedGateway(transport, fleet, plane)
    try:
        yield await shared.start()
    finally:
        await shared.stop()


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    body, _origin = add_header_module(tmp_path_factory.mktemp("wasm-module"))
    return body


def wasm_plugin(name: str, port: int, url: str, sha256: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "extensions.istio.io/v1alpha1",
        "kind": "WasmPlugin",
        "metadata": {"name": name, "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"istio": "ingressgateway"}},
            "url": url,
            "sha256": sha256,
            "match": [{"mode": "CLIENT", "ports": [{"number": port}]}],
            **spec,
        },
    }


def web_mesh(namespace: str, port: int, web: Any) -> str:
    host = fqdn("web", namespace)
    return render(
        service("web", namespace, 8000, [(web, {})]),
        gateway(namespace, port),
        virtual_service("web", namespace, [{"route": [to(host)]}]),
    )


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.1)


async def header(port: int) -> str | None:
    response = await fetch(LOOPBACK, port, "/")
    assert response.status == 200, response
    return response.header(HEADER[0])


def http_filters(dump: dict[str, Any], port: int) -> list[dict[str, Any]]:
    for config in dump["configs"]:
        for entry in config.get("dynamic_listeners", []):
            listener = entry.get("active_state", {}).get("listener", {})
            if listener.get("address", {}).get("socket_address", {}).get("port_value") != port:
                continue
            for chain in listener.get("filter_chains", []):
                for found in chain.get("filters", []):
                    if found["name"] == HCM:
                        filters: list[dict[str, Any]] = found["typed_config"]["http_filters"]
                        return filters
    return []


def ecds_names(dump: dict[str, Any]) -> list[str]:
    return [
        entry["ecds_filter"]["name"]
        for config in dump["configs"]
        if config.get("@type", "").endswith("EcdsConfigDump")
        for entry in config.get("ecds_filters", [])
    ]


async def test_a_file_plugin_adds_the_header_and_deleting_it_takes_it_away(
    gateway_turn: GatewayTurn, module: bytes, tmp_path: Path
) -> None:
    namespace, port = "wasm-file", free_port()
    web = await gateway_turn.upstream("web")
    path = tmp_path / "add_header.wasm"
    path.write_bytes(module)
    plugin = wasm_plugin(
        "wasm-file", port, f"file://{path}", hashlib.sha256(module).hexdigest(), phase="STATS"
    )
    shared = gateway_turn.gateway
    envoy = shared.envoy
    assert envoy is not None
    async with gateway_turn.serving(web_mesh(namespace, port, web), port):
        assert await header(port) is None
        keys = shared.apply(render(plugin))

        async def added() -> bool:
            return await header(port) == HEADER[1]

        await eventually(added, "the plugin adds its header")
        dump = await envoy.config_dump()
        names = [f["name"] for f in http_filters(dump, port)]
        resource = f"extensions.istio.io/wasmplugin/{GATEWAY_NAMESPACE}.wasm-file"
        assert names.index(resource) < names.index(ROUTER)
        (wasm_filter,) = [f for f in http_filters(dump, port) if f["name"] == resource]
        assert "config_discovery" in wasm_filter
        assert resource in ecds_names(dump)
        shared.delete(keys)

        async def removed() -> bool:
            return await header(port) is None

        await eventually(removed, "the header is gone with the plugin")


OVER_HTTP = "over-http!"
"""The header value of the module served over HTTP (another module than the file one's:
one already held by its digest would not be fetched at all)."""


@pytest_asyncio.fixture(loop_scope="module")
async def module_server(module: bytes) -> AsyncIterator[tuple[str, list[str]]]:
    hits: list[str] = []
    served = with_header_value(module, OVER_HTTP)

    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(body=served, content_type="application/wasm")

    app = web.Application()
    app.router.add_get("/add_header.wasm", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, LOOPBACK, 0)
    await site.start()
    try:
        yield f"http://{LOOPBACK}:{runner.addresses[0][1]}/add_header.wasm", hits
    finally:
        await runner.cleanup()


async def test_an_http_plugin_is_fetched_once_and_a_mismatch_keeps_the_last_good(
    gateway_turn: GatewayTurn,
    module: bytes,
    module_server: tuple[str, list[str]],
    tmp_path: Path,
) -> None:
    namespace, port = "wasm-http", free_port()
    url, hits = module_server
    web = await gateway_turn.upstream("web")
    shared = gateway_turn.gateway
    assert shared.plane.discovery is not None
    fetches = shared.plane.discovery.wasm_modules.fetches
    digest = hashlib.sha256(with_header_value(module, OVER_HTTP)).hexdigest()
    good = wasm_plugin("wasm-http", port, url, digest)
    async with gateway_turn.serving(web_mesh(namespace, port, web), port):
        keys = shared.apply(render(good))

        async def added() -> bool:
            return await header(port) == OVER_HTTP

        await eventually(added, "the fetched plugin adds its header")
        assert hits == ["/add_header.wasm"]
        shared.apply(render(wasm_plugin("wasm-http", port, url, digest, priority=5)))

        # an edit naming a file whose bytes are not what its sha256 says
        changed = with_header_value(module, "pilothous2")
        path = tmp_path / "changed.wasm"
        path.write_bytes(changed)
        mismatched = f"file://{path}"
        before = fetches[CHECKSUM_MISMATCH]
        shared.apply(render(wasm_plugin("wasm-http", port, mismatched, "0" * 64)))

        async def counted() -> bool:
            return fetches[CHECKSUM_MISMATCH] > before

        await eventually(counted, "the mismatch is counted")
        for _ in range(5):  # the last good module keeps answering
            assert await header(port) == OVER_HTTP
        assert hits == ["/add_header.wasm"]  # fetched once, whatever the edits

        served = fetches[OK]
        fixed = wasm_plugin("wasm-http", port, mismatched, hashlib.sha256(changed).hexdigest())
        shared.apply(render(fixed))

        async def replaced() -> bool:
            return await header(port) == "pilothous2"

        await eventually(replaced, "the matching module replaces the last good one")
        assert fetches[OK] == served + 1
        shared.delete(keys)


def network_filters(dump: dict[str, Any], port: int) -> list[str]:
    for config in dump["configs"]:
        for entry in config.get("dynamic_listeners", []):
            listener = entry.get("active_state", {}).get("listener", {})
            if listener.get("address", {}).get("socket_address", {}).get("port_value") != port:
                continue
            for chain in listener.get("filter_chains", []):
                return [f["name"] for f in chain.get("filters", [])]
    return []


async def test_a_network_plugin_loads_before_the_connection_manager(
    gateway_turn: GatewayTurn, module: bytes, tmp_path: Path
) -> None:
    namespace, port = "wasm-network", free_port()
    web = await gateway_turn.upstream("web")
    network = with_header_value(module, "network-l4")
    path = tmp_path / "network.wasm"
    path.write_bytes(network)
    digest = hashlib.sha256(network).hexdigest()
    plugin = wasm_plugin("wasm-network", port, f"file://{path}", digest, type="NETWORK")
    shared = gateway_turn.gateway
    envoy = shared.envoy
    assert envoy is not None
    resource = f"extensions.istio.io/wasmplugin/{GATEWAY_NAMESPACE}.wasm-network"
    async with gateway_turn.serving(web_mesh(namespace, port, web), port):
        keys = shared.apply(render(plugin))

        async def loaded() -> bool:
            dump = await envoy.config_dump()
            return network_filters(dump, port) == [resource, HCM] and resource in ecds_names(dump)

        await eventually(loaded, "the listener runs the network plugin")
        response = await fetch(LOOPBACK, port, "/")
        assert response.status == 200 and response.header(HEADER[0]) is None
        shared.delete(keys)


LUA = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"


def ecds_envoy_filter(port: int) -> dict[str, Any]:
    code = 'function envoy_on_response(h) h:headers():add("x-ecds", "lua") end'
    discovered = {
        "name": "ecds-lua",
        "config_discovery": {
            "config_source": {"ads": {}, "initial_fetch_timeout": "0s"},
            "type_urls": [LUA],
        },
    }
    return {
        "apiVersion": "networking.istio.io/v1alpha3",
        "kind": "EnvoyFilter",
        "metadata": {"name": "ecds-lua", "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "workloadSelector": {"labels": {"istio": "ingressgateway"}},
            "configPatches": [
                {
                    "applyTo": "HTTP_FILTER",
                    "match": {
                        "context": "GATEWAY",
                        "listener": {
                            "portNumber": port,
                            "filterChain": {"filter": {"name": HCM, "subFilter": {"name": ROUTER}}},
                        },
                    },
                    "patch": {"operation": "INSERT_BEFORE", "value": discovered},
                },
                {
                    "applyTo": "EXTENSION_CONFIG",
                    "patch": {
                        "operation": "ADD",
                        "value": {
                            "name": "ecds-lua",
                            "typed_config": {
                                "@type": LUA,
                                "default_source_code": {"inline_string": code},
                            },
                        },
                    },
                },
            ],
        },
    }


async def test_an_envoy_filter_extension_config_is_served_over_ecds(
    gateway_turn: GatewayTurn,
) -> None:
    namespace, port = "wasm-ecds", free_port()
    web = await gateway_turn.upstream("web")
    shared = gateway_turn.gateway
    async with gateway_turn.serving(web_mesh(namespace, port, web), port):
        keys = shared.apply(render(ecds_envoy_filter(port)))

        async def added() -> bool:
            response = await fetch(LOOPBACK, port, "/")
            return response.status == 200 and response.header("x-ecds") == "lua"

        await eventually(added, "the Lua filter from ECDS adds its header")
        shared.delete(keys)
