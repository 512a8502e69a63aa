"""Gateway API from files to a real Envoy: ``pilothouse serve --config DIR`` (a real
process) serves a Gateway and HTTPRoutes written as users write them, and one real
Envoy, labelled ``gateway.networking.k8s.io/gateway-name: web`` as istiod's gateway
deployments are, routes real HTTP between local upstreams.

The first test has one serve process and one Envoy (each phase waits on a
condition with a deadline): path and header matches with the spec's precedence and the
path-separated prefix; request and response header modifiers; a weighted split; a
redirect and a prefix rewrite; a mirror; a backend in another namespace refused (500)
until a ReferenceGrant file appears, with the route's status saying why; a TCP listener
and its TCPRoute; a named rule's route name in Envoy's config dump; kubectl's names on
``/debug/configz``; and a route file edit that moves live traffic. A second test runs
GAMMA on a real sidecar (an HTTPRoute, a TCPRoute and a TLSRoute with a Service parent),
a third a GRPCRoute's method, service and header matches between real gRPC backends, a
fourth TLS Passthrough by SNI.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from grpc_health.v1 import health_pb2

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from tests.e2e.grpc_apps.backends import (
    BACKEND_HEADER,
    HEALTH_CHECK_METHOD,
    TAG_METHOD,
    TAG_SERVICE,
    Backends,
)
from tests.e2e.harness.client import HttpResponse, fetch, send_requests
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.tls import ThrowawayCa, client_ssl_context
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    fqdn,
    render,
    serve,
    service,
    sidecar,
    start_sidecar,
    to,
    virtual_service,
)

GW = "gateway.networking.k8s.io/v1"
NAMESPACE = "edge"


def _gateway(port: int, tcp_port: int) -> dict[str, object]:
    return {
        "apiVersion": GW,
        "kind": "Gateway",
        "metadata": {"name": "web", "namespace": NAMESPACE},
        "spec": {
            "gatewayClassName": "istio",
            "listeners": [
                {
                    "name": "http",
                    "port": port,
                    "protocol": "HTTP",
                    "hostname": "*.example.com",
                    "allowedRoutes": {"namespaces": {"from": "All"}},
                },
                {"name": "tcp", "port": tcp_port, "protocol": "TCP"},
            ],
        },
    }


def _backend(name: str, namespace: str = NAMESPACE, **more: object) -> dict[str, object]:
    return {"name": name, "namespace": namespace, "port": 9080, **more}


def _routes(api_backend: str) -> str:
    shop = {
        "apiVersion": GW,
        "kind": "HTTPRoute",
        "metadata": {"name": "shop", "namespace": NAMESPACE},
        "spec": {
            "parentRefs": [{"name": "web"}],
            "hostnames": ["shop.example.com"],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                    "filters": [
                        {
                            "type": "RequestHeaderModifier",
                            "requestHeaderModifier": {"set": [{"name": "x-gw", "value": "yes"}]},
                        },
                        {
                            "type": "ResponseHeaderModifier",
                            "responseHeaderModifier": {"add": [{"name": "x-seen", "value": "1"}]},
                        },
                    ],
                    "backendRefs": [_backend(api_backend)],
                },
                {
                    "matches": [
                        {
                            "path": {"type": "PathPrefix", "value": "/api"},
                            "headers": [{"name": "x-version", "value": "v2"}],
                        }
                    ],
                    "backendRefs": [_backend("v2")],
                },
                {
                    "name": "split",
                    "matches": [{"path": {"type": "PathPrefix", "value": "/split"}}],
                    "backendRefs": [_backend("v1", weight=1), _backend("v2", weight=3)],
                },
                {
                    "matches": [{"path": {"type": "Exact", "value": "/old"}}],
                    "filters": [
                        {
                            "type": "RequestRedirect",
                            "requestRedirect": {
                                "statusCode": 301,
                                "path": {"type": "ReplaceFullPath", "replaceFullPath": "/new"},
                            },
                        }
                    ],
                },
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/moved"}}],
                    "filters": [
                        {
                            "type": "RequestRedirect",
                            "requestRedirect": {
                                "path": {
                                    "type": "ReplacePrefixMatch",
                                    "replacePrefixMatch": "/here",
                                }
                            },
                        }
                    ],
                },
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/rw"}}],
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {
                                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/in"}
                            },
                        },
                        {
                            "type": "RequestMirror",
                            "requestMirror": {"backendRef": _backend("mirror")},
                        },
                    ],
                    "backendRefs": [_backend("v1")],
                },
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/far"}}],
                    "backendRefs": [_backend("far", namespace="shop")],
                },
                {"backendRefs": [_backend("v1")]},
            ],
        },
    }
    return render(shop)


TCP_ROUTE = render(
    {
        "apiVersion": "gateway.networking.k8s.io/v1alpha2",
        "kind": "TCPRoute",
        "metadata": {"name": "raw", "namespace": NAMESPACE},
        "spec": {
            "parentRefs": [{"name": "web", "sectionName": "tcp"}],
            "rules": [{"backendRefs": [_backend("v2")]}],
        },
    }
)
GRANT = render(
    {
        "apiVersion": "gateway.networking.k8s.io/v1beta1",
        "kind": "ReferenceGrant",
        "metadata": {"name": "edge-routes", "namespace": "shop"},
        "spec": {
            "from": [
                {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": NAMESPACE}
            ],
            "to": [{"group": "", "kind": "Service"}],
        },
    }
)


async def until(
    check: Callable[[], Awaitable[bool]],
    what: str,
    describe: Callable[[], str],
    timeout: float = 10,
) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"{what}\n{describe()}"
        await asyncio.sleep(0.05)


async def status_of(admin: int, kind: str) -> dict[str, Any]:
    """The status ``/debug/gateway_apiz`` reports for the test's object of ``kind``."""
    answer = await fetch(LOOPBACK, admin, f"/debug/gateway_apiz?namespace={NAMESPACE}")
    assert answer.status == 200, answer.body
    (found,) = [o["status"] for o in answer.json()["objects"] if o["kind"] == kind]
    return cast(dict[str, Any], found)


async def resolved_refs(admin: int) -> tuple[str, str]:
    (parent,) = (await status_of(admin, "HTTPRoute"))["parents"]
    (condition,) = [c for c in parent["conditions"] if c["type"] == "ResolvedRefs"]
    return condition["status"], condition["reason"]


@pytest.mark.parametrize("transport", [XdsTransport.DELTA])
async def test_gateway_api_routes_real_traffic_from_files(
    tmp_path: Path,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
    transport: XdsTransport,
) -> None:
    upstreams = {n: await upstream_factory(n) for n in ("v1", "v2", "v3", "mirror", "far")}
    listen, tcp, xds, admin = free_port(), free_port(), free_port(), free_port()
    mesh = tmp_path / "mesh"
    mesh.mkdir()
    services = [
        service(name, NAMESPACE, 9080, [(upstreams[name], {})])
        for name in ("v1", "v2", "v3", "mirror")
    ]
    (mesh / "services.yaml").write_text(
        render(
            *services, service("far", "shop", 9080, [(upstreams["far"], {})]), _gateway(listen, tcp)
        )
    )
    routes = mesh / "routes.yaml"
    routes.write_text(_routes("v1"))
    (mesh / "tcp.yaml").write_text(TCP_ROUTE)
    serve = ServeProcess([mesh], xds_port=xds, admin_port=admin, log_path=tmp_path / "serve.log")
    serve.start()
    try:
        await serve.wait_ready()
        options = EnvoyBootstrapOptions(
            node_id=f"router~127.0.0.1~web-istio-1.{NAMESPACE}~{NAMESPACE}.svc.cluster.local",
            node_metadata={
                "NAMESPACE": NAMESPACE,
                "LABELS": {"gateway.networking.k8s.io/gateway-name": "web"},
            },
            xds_port=xds,
            admin_port=0,
            transport=transport,
        )
        envoy = await envoy_factory(envoy_bootstrap(options))
        await wait_for_port(listen, timeout=10)

        def describe() -> str:
            return f"{envoy_factory.describe()}\n{serve.log_tail()}"

        async def get(path: str, *headers: tuple[str, str]) -> HttpResponse:
            return await fetch(
                LOOPBACK, listen, path, headers=headers, authority="shop.example.com"
            )

        # Path prefix and header matches, in the spec's precedence (more headers first).
        api = await get("/api/items")
        assert api.status == 200 and api.header("x-upstream") == "v1", describe()
        assert api.json()["headers"].get("x-gw") == "yes" and api.header("x-seen") == "1"
        assert (await get("/api/items", ("x-version", "v2"))).header("x-upstream") == "v2"
        assert (await get("/api", ("x-version", "v2"))).header("x-upstream") == "v2"
        apix = await get("/apix")  # not under the /api prefix: the catch-all rule
        assert apix.header("x-upstream") == "v1" and "x-gw" not in apix.json()["headers"]
        # A host the listener's *.example.com admits but no route names: 404.
        other = await fetch(LOOPBACK, listen, "/api", authority="other.example.com")
        assert other.status == 404
        # Redirect, rewrite and mirror.
        moved = await get("/old")
        assert moved.status == 301 and moved.header("location") == "http://shop.example.com/new"
        for path, location in (("/moved/a/b", "/here/a/b"), ("/moved", "/here")):
            answer = await get(path)
            assert answer.status == 302, (path, answer.status)
            assert answer.header("location") == f"http://shop.example.com{location}", path
        rewritten = await get("/rw/page")
        assert rewritten.json()["path"] == "/in/page"
        await until(
            lambda: asyncio.sleep(0, upstreams["mirror"].requests > 0),
            "the mirror never saw the request",
            describe,
        )
        # A TCP listener forwards connections by its TCPRoute.
        await wait_for_port(tcp, timeout=10)
        assert (await fetch(LOOPBACK, tcp, "/any")).header("x-upstream") == "v2"
        # Weighted split 1:3.
        report = await send_requests(
            LOOPBACK, listen, 200, path="/split", authority="shop.example.com", concurrency=4
        )
        assert report.ok == 200, report.summary()
        share = 100 * report.upstreams["v2"] / 200
        assert 63 <= share <= 87, report.summary()  # 75 ± 3.5 standard deviations
        # A named rule names its routes in Envoy's route configuration; others keep theirs.
        dump = await envoy.config_dump()
        (held,) = [c for c in dump["configs"] if c["@type"].endswith(".RoutesConfigDump")]
        named = {
            route["name"]
            for config in held["dynamic_route_configs"]
            for host in config["route_config"]["virtual_hosts"]
            for route in host["routes"]
        }
        assert {"edge.shop.split", "edge.shop.0.0"} <= named, sorted(named)
        # Another namespace's Service: refused (500) until a ReferenceGrant allows it, and
        # the route's status says why.
        assert (await get("/far")).status == 500
        assert await resolved_refs(admin) == ("False", "RefNotPermitted")
        gateway = await status_of(admin, "Gateway")
        assert [c["reason"] for c in gateway["conditions"]] == ["Accepted", "Programmed"]
        assert gateway["listeners"][0]["attachedRoutes"] == 1
        # kubectl's short name and the CRDs' category name kinds on /debug/configz
        short = (await fetch(LOOPBACK, admin, "/debug/configz?kind=gtw")).json()
        assert [(o["kind"], o["metadata"]["name"]) for o in short] == [("Gateway", "web")]
        category = (await fetch(LOOPBACK, admin, "/debug/configz?kind=gateway-api")).json()
        assert sorted(o["kind"] for o in category) == ["Gateway", "HTTPRoute", "TCPRoute"]
        (mesh / "grant.yaml").write_text(GRANT)

        async def far_reached() -> bool:
            return (await get("/far")).header("x-upstream") == "far"

        await until(far_reached, "the ReferenceGrant never let /far through", describe)
        assert await resolved_refs(admin) == ("True", "ResolvedRefs")
        # An edit of the route file moves live traffic.
        routes.write_text(_routes("v3"))

        async def moved_to_v3() -> bool:
            return (await get("/api/items")).header("x-upstream") == "v3"

        await until(moved_to_v3, "the route edit never reached Envoy", describe)
    finally:
        await serve.stop()


async def _tls_backend(name: str, context: ssl.SSLContext) -> asyncio.Server:
    """A TLS server answering one HTTP/1.1 request with ``x-upstream: <name>``."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            f"HTTP/1.1 200 OK\r\nx-upstream: {name}\r\nconnection: close\r\n".encode()
            + b"content-length: 0\r\n\r\n"
        )
        await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, LOOPBACK, 0, ssl=context)


async def test_gamma_a_service_parent_changes_a_sidecar_s_routing(
    envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool, tmp_path: Path
) -> None:
    """An HTTPRoute whose parent is the Service ``reviews`` sends the sidecar's canary
    requests to ``reviews-v2``; the rest still reach ``reviews``. An Istio VirtualService
    for another service of the same sidecar keeps working beside it. A TCPRoute whose
    parent is the Service ``db`` sends the sidecar's TCP connections for it to ``db-v2``.
    A TLSRoute whose parent is the Service ``vault`` sends the sidecar's TLS connections
    with SNI ``vault``'s host, unopened, to ``vault-v2``; other names still reach
    ``vault``."""
    namespace, port, tcp_port, tls_port = "shop", free_port(), free_port(), free_port()
    vault_host = fqdn("vault", namespace)
    authority = ThrowawayCa(tmp_path / "ca")
    issued = authority.issue("vault", (vault_host, "other.example.test"))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(str(issued.cert), str(issued.key))
    vault = await _tls_backend("vault", server_context)
    vault_v2 = await _tls_backend("vault-v2", server_context)
    vault_ends = [
        GrpcEndpoint(LOOPBACK, server.sockets[0].getsockname()[1]) for server in (vault, vault_v2)
    ]
    stable = await upstream_factory("reviews")
    canary = await upstream_factory("reviews-v2")
    ratings = await upstream_factory("ratings")
    ratings_v2 = await upstream_factory("ratings-v2")
    db, db_v2 = await upstream_factory("db"), await upstream_factory("db-v2")
    tcp_egress = {
        "port": {"number": tcp_port, "protocol": "TCP", "name": "egress-tcp"},
        "bind": LOOPBACK,
        "captureMode": "NONE",
        "hosts": [f"./{fqdn('db', namespace)}"],
    }
    tls_egress = {
        "port": {"number": tls_port, "protocol": "TLS", "name": "egress-tls"},
        "bind": LOOPBACK,
        "captureMode": "NONE",
        "hosts": [f"./{vault_host}"],
    }
    with_tcp = sidecar(namespace, port)
    with_tcp["spec"]["egress"].extend([tcp_egress, tls_egress])
    mesh = render(
        service("reviews", namespace, port, [(stable, {})]),
        service("reviews-v2", namespace, port, [(canary, {})]),
        service("ratings", namespace, port, [(ratings, {})]),
        service("ratings-v2", namespace, port, [(ratings_v2, {})]),
        service("db", namespace, tcp_port, [(db, {})], protocol="TCP"),
        service("db-v2", namespace, tcp_port, [(db_v2, {})], protocol="TCP"),
        service("vault", namespace, tls_port, [(vault_ends[0], {})], protocol="TLS"),  # type: ignore[list-item]
        service("vault-v2", namespace, tls_port, [(vault_ends[1], {})], protocol="TLS"),  # type: ignore[list-item]
        with_tcp,
        {
            "apiVersion": "gateway.networking.k8s.io/v1alpha2",
            "kind": "TLSRoute",
            "metadata": {"name": "vault-move", "namespace": namespace},
            "spec": {
                "parentRefs": [{"group": "", "kind": "Service", "name": "vault"}],
                "rules": [{"backendRefs": [{"name": "vault-v2", "port": tls_port}]}],
            },
        },
        {
            "apiVersion": "gateway.networking.k8s.io/v1alpha2",
            "kind": "TCPRoute",
            "metadata": {"name": "db-move", "namespace": namespace},
            "spec": {
                "parentRefs": [{"group": "", "kind": "Service", "name": "db", "port": tcp_port}],
                "rules": [{"backendRefs": [{"name": "db-v2", "port": tcp_port}]}],
            },
        },
        virtual_service(
            "ratings",
            namespace,
            [{"route": [to(fqdn("ratings-v2", namespace))]}],
            hosts=[fqdn("ratings", namespace)],
            gateways=(),
        ),
        {
            "apiVersion": GW,
            "kind": "HTTPRoute",
            "metadata": {"name": "canary", "namespace": namespace},
            "spec": {
                "parentRefs": [{"group": "", "kind": "Service", "name": "reviews", "port": port}],
                "rules": [
                    {
                        "matches": [{"headers": [{"name": "x-canary", "value": "1"}]}],
                        "backendRefs": [{"name": "reviews-v2", "port": port}],
                    },
                    {"backendRefs": [{"name": "reviews", "port": port}]},
                ],
            },
        },
    )
    plane = await serve(mesh)
    try:
        await start_sidecar(envoy_factory, plane, namespace, port, XdsTransport.SOTW)
        host = fqdn("reviews", namespace)
        plain = await send_requests(LOOPBACK, port, 5, authority=host)
        flagged = await send_requests(LOOPBACK, port, 5, authority=host, headers={"x-canary": "1"})
        rated = await send_requests(LOOPBACK, port, 3, authority=fqdn("ratings", namespace))
        await wait_for_port(tcp_port, timeout=10)
        moved = await send_requests(LOOPBACK, tcp_port, 3, authority=fqdn("db", namespace))
        await wait_for_port(tls_port, timeout=10)
        trusting = client_ssl_context(authority.cert_path)
        by_sni = {
            name: await fetch(
                LOOPBACK, tls_port, "/", authority=name, ssl_context=trusting, server_hostname=name
            )
            for name in (vault_host, "other.example.test")
        }
    finally:
        await plane.stop()
        for server in (vault, vault_v2):
            server.close()
            await server.wait_closed()
    assert dict(plain.upstreams) == {"reviews": 5}, plain.summary()
    assert dict(flagged.upstreams) == {"reviews-v2": 5}, flagged.summary()
    assert dict(rated.upstreams) == {"ratings-v2": 3}, rated.summary()
    assert dict(moved.upstreams) == {"db-v2": 3}, moved.summary()
    assert {name: answer.header("x-upstream") for name, answer in by_sni.items()} == {
        vault_host: "vault-v2",
        "other.example.test": "vault",
    }


@dataclass(frozen=True)
class GrpcEndpoint:
    """A gRPC backend's address, as :func:`service` reads an upstream's."""

    host: str
    port: int


async def test_grpc_route_matches_service_method_and_headers(envoy_factory: EnvoyFleet) -> None:
    """A GRPCRoute on an HTTP listener: an exact method with a header goes to one backend,
    the rest of the service to another, a whole other service by its name."""
    namespace, port = "grpc", free_port()
    backends = Backends()
    try:
        a = await backends.start("tag-a")
        b = await backends.start("tag-b")
        route = {
            "apiVersion": GW,
            "kind": "GRPCRoute",
            "metadata": {"name": "tags", "namespace": namespace},
            "spec": {
                "parentRefs": [{"name": "web"}],
                "rules": [
                    {
                        "matches": [
                            {
                                "method": {"service": TAG_SERVICE, "method": "Tag"},
                                "headers": [{"name": "x-pick", "value": "b"}],
                            }
                        ],
                        "backendRefs": [{"name": "b", "port": 50051}],
                    },
                    {
                        "matches": [{"method": {"service": TAG_SERVICE}}],
                        "backendRefs": [{"name": "a", "port": 50051}],
                    },
                    {
                        "matches": [{"method": {"service": "grpc.health.v1.Health"}}],
                        "backendRefs": [{"name": "b", "port": 50051}],
                    },
                ],
            },
        }
        gateway = {
            "apiVersion": GW,
            "kind": "Gateway",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "gatewayClassName": "istio",
                "listeners": [{"name": "grpc", "port": port, "protocol": "HTTP"}],
            },
        }
        mesh = render(
            service("a", namespace, 50051, [(GrpcEndpoint(LOOPBACK, a), {})], protocol="GRPC"),  # type: ignore[list-item]
            service("b", namespace, 50051, [(GrpcEndpoint(LOOPBACK, b), {})], protocol="GRPC"),  # type: ignore[list-item]
            gateway,
            route,
        )
        plane = await serve(mesh)
        try:
            options = EnvoyBootstrapOptions(
                node_id=f"router~127.0.0.1~web-istio-1.{namespace}~{namespace}.svc.cluster.local",
                node_metadata={
                    "NAMESPACE": namespace,
                    "LABELS": {"gateway.networking.k8s.io/gateway-name": "web"},
                },
                xds_port=plane.port,
                admin_port=0,
                transport=XdsTransport.SOTW,
            )
            await envoy_factory(envoy_bootstrap(options))
            await wait_for_port(port, timeout=10)
            async with grpc.aio.insecure_channel(f"{LOOPBACK}:{port}") as channel:
                tag = channel.unary_unary(TAG_METHOD)
                plain = await tag(b"x", timeout=5)
                picked = await tag(b"x", metadata=(("x-pick", "b"),), timeout=5)
                health = channel.unary_unary(
                    HEALTH_CHECK_METHOD,
                    request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                    response_deserializer=health_pb2.HealthCheckResponse.FromString,
                )
                call = health(health_pb2.HealthCheckRequest(), timeout=5)
                await call
                answered_by = dict(await call.initial_metadata()).get(BACKEND_HEADER)
        finally:
            await plane.stop()
    finally:
        await backends.close_all()
    assert (plain, picked) == (b"tag-a", b"tag-b")
    assert answered_by == "tag-b"


async def test_tls_passthrough_forwards_by_sni(envoy_factory: EnvoyFleet, tmp_path: Path) -> None:
    """A TLS Passthrough listener hands the client's TLS connection, unopened, to the
    TLSRoute backend its SNI names: the client sees the backend's own certificate."""
    namespace, port, host = "tls", free_port(), "secure.example.test"
    authority = ThrowawayCa(tmp_path / "ca")
    issued = authority.issue("backend", (host,))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(str(issued.cert), str(issued.key))

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b"passed through"
        writer.write(
            b"HTTP/1.1 200 OK\r\nx-upstream: tls-backend\r\nconnection: close\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    backend = await asyncio.start_server(answer, LOOPBACK, 0, ssl=server_context)
    backend_port = backend.sockets[0].getsockname()[1]
    mesh = render(
        service(
            "secure", namespace, 8443, [(GrpcEndpoint(LOOPBACK, backend_port), {})], protocol="TLS"
        ),  # type: ignore[list-item]
        {
            "apiVersion": GW,
            "kind": "Gateway",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "gatewayClassName": "istio",
                "listeners": [
                    {
                        "name": "tls",
                        "port": port,
                        "protocol": "TLS",
                        "hostname": "*.example.test",
                        "tls": {"mode": "Passthrough"},
                    }
                ],
            },
        },
        {
            "apiVersion": "gateway.networking.k8s.io/v1alpha2",
            "kind": "TLSRoute",
            "metadata": {"name": "secure", "namespace": namespace},
            "spec": {
                "parentRefs": [{"name": "web"}],
                "hostnames": [host],
                "rules": [{"backendRefs": [{"name": "secure", "port": 8443}]}],
            },
        },
    )
    plane = await serve(mesh)
    try:
        options = EnvoyBootstrapOptions(
            node_id=f"router~127.0.0.1~web-istio-1.{namespace}~{namespace}.svc.cluster.local",
            node_metadata={
                "NAMESPACE": namespace,
                "LABELS": {"gateway.networking.k8s.io/gateway-name": "web"},
            },
            xds_port=plane.port,
            admin_port=0,
            transport=XdsTransport.DELTA,
        )
        await envoy_factory(envoy_bootstrap(options))
        await wait_for_port(port, timeout=10)
        trusting = client_ssl_context(authority.cert_path)
        answer_seen = await fetch(
            LOOPBACK, port, "/", authority=host, ssl_context=trusting, server_hostname=host
        )
    finally:
        await plane.stop()
        backend.close()
        await backend.wait_closed()
    assert answer_seen.status == 200 and answer_seen.header("x-upstream") == "tls-backend"
    assert answer_seen.body == b"passed through"
