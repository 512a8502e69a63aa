"""REST-JSON discovery and the admin server over a real socket, against an in-process mesh.

A DiscoveryServer over a MemoryStore, served by AdminServer on 127.0.0.1:<free port>;
requests go through aiohttp's client exactly as Envoy's REST subscriptions send them
(POST /v3/discovery:<type>, proto3 JSON body, empty fields omitted).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2, json_format

from pilothouse.admin.app import REST, build_admin_app
from pilothouse.admin.server import AdminServer
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, EDS
from pilothouse.push.debounce import DebounceSettings
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.discovery import DiscoveryServer, XdsSettings
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from pilothouse.xds.server.rest import RestDiscovery, RestSettings

FAST = XdsSettings(debounce=DebounceSettings(debounce_after=0.01, debounce_max=1.0))
NODE = "sidecar~10.0.0.1~app-1.shop~shop.svc.cluster.local"
HOST = "cart.shop.svc.cluster.local"
CART = f"outbound|8080||{HOST}"
DB = "outbound|5432||db.shop.svc.cluster.local"

SERVICES = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cart, namespace: shop}
spec:
  hosts: [cart.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: cart}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: shop}
spec:
  hosts: [db.shop.svc.cluster.local]
  resolution: DNS
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  endpoints: [{address: db.example.com}]
"""


def workload(address: str, port: int = 18080) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: cart-1, namespace: shop}}
spec:
  address: {address}
  ports: {{http: {port}}}
  labels: {{app: cart, version: v1}}
"""


def apply(store: MemoryStore, text: str) -> None:
    for config in Loader(SCHEMAS, source="test").load_strict(text, "x.yaml"):
        store.apply(config)


@dataclass
class Plane:
    store: MemoryStore
    discovery: DiscoveryServer
    admin: AdminServer
    session: aiohttp.ClientSession
    port: int
    task: asyncio.Task[None] | None = None

    @property
    def rest(self) -> RestDiscovery:
        return self.admin.app[REST]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def start_discovery(self) -> None:
        self.store.mark_synced()
        self.task = asyncio.create_task(self.discovery.run())
        await asyncio.wait_for(self.discovery.wait_ready(), 10)

    async def post(
        self,
        kind: str,
        body: dict[str, Any] | bytes,
        content_type: str = "application/json",
    ) -> tuple[int, bytes]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with self.session.post(
            self.url(f"/v3/discovery:{kind}"), data=data, headers={"content-type": content_type}
        ) as response:
            return response.status, await response.read()

    async def discover(self, kind: str, **fields: Any) -> tuple[int, dict[str, Any]]:
        status, body = await self.post(kind, envoy_request(**fields))
        return status, (json.loads(body) if body else {})

    async def get(self, path: str) -> tuple[int, str]:
        async with self.session.get(self.url(path)) as response:
            return response.status, await response.text()


def envoy_request(
    node_id: str = NODE, *, names: tuple[str, ...] = (), version: str = "", extensions: int = 0
) -> dict[str, Any]:
    """A request shaped like Envoy 1.40's: proto field names, empty fields omitted."""
    node: dict[str, Any] = {
        "id": node_id,
        "cluster": "cart.shop",
        "user_agent_name": "envoy",
        "user_agent_build_version": {"version": {"major_number": 1, "minor_number": 40}},
        "metadata": {"NAMESPACE": "shop", "LABELS": {"app": "client"}},
    }
    if extensions:
        node["extensions"] = [
            {
                "name": f"envoy.filters.http.extension_number_{i:04d}",
                "category": "envoy.filters.http",
                "type_urls": [f"envoy.extensions.filters.http.number_{i}.v3.Config"],
            }
            for i in range(extensions)
        ]
    request: dict[str, Any] = {"node": node}
    if version:
        request["version_info"] = version
    if names:
        request["resource_names"] = list(names)
    return request


@contextlib.asynccontextmanager
async def running_plane(*, synced: bool = True) -> AsyncIterator[Plane]:
    store = MemoryStore("test")
    apply(store, SERVICES + "---\n" + workload("10.1.0.1"))
    discovery = DiscoveryServer(store, settings=FAST)
    admin = AdminServer(
        build_admin_app(
            DiscoveryDebugView(discovery),
            rest=RestDiscovery(discovery, RestSettings(max_body_bytes=1 << 20)),
        ),
        shutdown_timeout=0.25,  # a refused large body may still be draining at the end
    )
    port = await admin.start("127.0.0.1", 0)
    session = aiohttp.ClientSession()
    plane = Plane(store, discovery, admin, session, port)
    try:
        if synced:
            await plane.start_discovery()
        yield plane
    finally:
        await session.close()
        await admin.stop()
        discovery.close()
        if plane.task is not None:
            plane.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await plane.task


@pytest.fixture
async def plane() -> AsyncIterator[Plane]:
    async with running_plane() as running:
        yield running


async def wait_for(predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.02)


def clusters_of(body: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for resource in body["resources"]:
        assert resource["@type"] == CDS
        packed = json_format.ParseDict(resource, any_pb2.Any())  # the proto3 JSON of an Any
        cluster = cluster_pb2.Cluster()
        assert packed.Unpack(cluster)
        out[cluster.name] = cluster
    return out


def endpoints_of(body: dict[str, Any]) -> dict[str, list[tuple[str, int]]]:
    out = {}
    for resource in body["resources"]:
        assert resource["@type"] == EDS
        out[resource["cluster_name"]] = [
            (
                lb["endpoint"]["address"]["socket_address"]["address"],
                lb["endpoint"]["address"]["socket_address"]["port_value"],
            )
            for group in resource.get("endpoints", [])
            for lb in group.get("lb_endpoints", [])
        ]
    return out


# -- discovery --------------------------------------------------------------------------


async def test_clusters_for_a_sidecar_point_eds_at_rest(plane: Plane) -> None:
    status, body = await plane.discover("clusters")
    assert status == 200
    assert body["type_url"] == CDS and body["version_info"]
    clusters = clusters_of(body)
    assert {CART, DB, "BlackHoleCluster", "PassthroughCluster"} <= set(clusters)
    cart = clusters[CART]
    assert cart.type == cluster_pb2.Cluster.EDS
    source = cart.eds_cluster_config.eds_config
    assert not source.HasField("ads")
    api = source.api_config_source
    assert api.api_type == api.REST
    assert list(api.cluster_names) == ["xds-rest"]
    assert api.refresh_delay.ToTimedelta().total_seconds() == 1.0
    assert cart.eds_cluster_config.service_name == CART
    # A DNS cluster carries its endpoints inline, the same as over ADS.
    assert clusters[DB].type == cluster_pb2.Cluster.STRICT_DNS


async def test_endpoints_by_name(plane: Plane) -> None:
    status, body = await plane.discover("endpoints", names=(CART,))
    assert status == 200
    assert endpoints_of(body) == {CART: [("10.1.0.1", 18080)]}
    status, body = await plane.discover("endpoints", names=("outbound|9999||nope.shop",))
    assert status == 200 and body["resources"] == []
    # No names: every EDS cluster the proxy sees (the DNS service has none).
    status, body = await plane.discover("endpoints")
    assert status == 200 and set(endpoints_of(body)) == {CART}


async def test_same_version_is_304_and_counted(plane: Plane) -> None:
    status, body = await plane.discover("clusters")
    assert status == 200
    version = body["version_info"]
    status, again = await plane.discover("clusters")
    assert status == 200 and again["version_info"] == version  # stable while nothing changes
    for _ in range(3):
        status, raw = await plane.post("clusters", envoy_request(version=version))
        assert status == 304 and raw == b""
    status, _ = await plane.discover("clusters", version="some-older-version")
    assert status == 200
    stats = plane.rest.stats
    assert stats.responses == 3 and stats.not_modified == 3 and stats.requests == 6
    assert stats.by_type == {"CDS": 6}
    # The JSON of each cluster was rendered once; later 200s reused it.
    assert plane.rest.json.misses == len(clusters_of(body))


async def test_a_config_change_gives_a_new_version(plane: Plane) -> None:
    _, eds = await plane.discover("endpoints", names=(CART,))
    _, cds = await plane.discover("clusters")

    apply(plane.store, workload("10.1.0.2", 18081))

    async def moved() -> dict[str, Any] | None:
        status, body = await plane.discover("endpoints", names=(CART,), version=eds["version_info"])
        return body if status == 200 else None

    changed = await wait_for(moved)
    assert endpoints_of(changed) == {CART: [("10.1.0.2", 18081)]}
    assert changed["version_info"] != eds["version_info"]
    # An endpoint change leaves CDS alone.
    status, _ = await plane.post("clusters", envoy_request(version=cds["version_info"]))
    assert status == 304

    apply(plane.store, SERVICES.replace("number: 8080", "number: 8081"))

    async def new_clusters() -> dict[str, Any] | None:
        status, body = await plane.discover("clusters", version=cds["version_info"])
        return body if status == 200 else None

    clusters = clusters_of(await wait_for(new_clusters))
    assert f"outbound|8081||{HOST}" in clusters and CART not in clusters


async def test_a_nack_is_counted_and_answered(plane: Plane) -> None:
    request = envoy_request(names=(CART,))
    request["error_detail"] = {"code": 3, "message": "bad endpoint"}
    status, raw = await plane.post("endpoints", request)
    assert status == 200 and endpoints_of(json.loads(raw)) == {CART: [("10.1.0.1", 18080)]}
    assert plane.rest.stats.nacks == {"EDS": 1}


async def test_a_realistic_envoy_body_is_accepted(plane: Plane) -> None:
    request = envoy_request(extensions=516)
    data = json.dumps(request).encode()
    assert len(data) > 70_000
    status, raw = await plane.post("clusters", data)
    assert status == 200 and CART in clusters_of(json.loads(raw))


async def test_camel_case_json_is_accepted_too(plane: Plane) -> None:
    _, body = await plane.discover("endpoints", names=(CART,))
    request = {
        "node": {"id": NODE, "userAgentName": "envoy"},
        "resourceNames": [CART],
        "versionInfo": body["version_info"],
        "typeUrl": EDS,
    }
    status, raw = await plane.post("endpoints", request)
    assert status == 304 and raw == b""


# -- refusals ---------------------------------------------------------------------------


def error_of(raw: bytes) -> str:
    body = json.loads(raw)
    assert isinstance(body["error"], str)
    return body["error"]


async def test_bad_node_and_bad_json_are_400(plane: Plane) -> None:
    status, raw = await plane.post("clusters", envoy_request("not-an-istio-id"))
    assert status == 400 and "expected 4" in error_of(raw)
    status, raw = await plane.post("clusters", {"versionInfo": "x"})
    assert status == 400 and "node" in error_of(raw)
    status, raw = await plane.post("clusters", b"{not json")
    assert status == 400 and "not JSON" in error_of(raw)
    status, raw = await plane.post("clusters", b"[1, 2]")
    assert status == 400 and "JSON object" in error_of(raw)
    status, raw = await plane.post("clusters", {"node": {"id": NODE}, "versionInfo": 7})
    assert status == 400 and "DiscoveryRequest" in error_of(raw)
    wrong_type = {**envoy_request(), "type_url": EDS}
    status, raw = await plane.post("clusters", wrong_type)
    assert status == 400 and "type_url" in error_of(raw)
    assert plane.rest.stats.errors == {400: 6}


async def test_size_type_and_path_refusals(plane: Plane) -> None:
    big = json.dumps({**envoy_request(), "pad": "x" * (1 << 20)}).encode()
    status, raw = await plane.post("clusters", big)
    assert status == 413 and "larger than" in error_of(raw)
    status, raw = await plane.post("clusters", json.dumps(envoy_request()).encode(), "text/plain")
    assert status == 415 and "not JSON" in error_of(raw)
    status, raw = await plane.post("secretz", envoy_request())
    assert status == 404 and "unknown discovery type" in error_of(raw)
    status, _ = await plane.get("/v3/discovery:clusters")
    assert status == 405
    # Listeners come from the same LDS generator as over gRPC.
    status, raw = await plane.post("listeners", envoy_request())
    names = [r["name"] for r in json.loads(raw)["resources"]]
    assert status == 200 and "0.0.0.0_5432" in names
    stats = plane.rest.stats
    assert stats.requests == 4 and stats.responses == 1
    assert stats.errors == {413: 1, 415: 1, 404: 1}


async def test_rendered_json_is_bounded_and_reused(plane: Plane) -> None:
    rest = RestDiscovery(plane.discovery, RestSettings(json_cache_entries=2))
    request = json.dumps(envoy_request()).encode()
    first = rest.answer("clusters", request)
    assert first.status == 200 and len(json.loads(first.body)["resources"]) == 4
    assert len(rest.json) == 2 and rest.json.misses == 4
    # Same content, same bytes, whether rendered afresh or taken from the cache.
    assert rest.answer("clusters", request).body == first.body
    assert RestDiscovery(plane.discovery).answer("clusters", request).body == first.body


async def test_the_default_limit_allows_4_mib() -> None:
    store = MemoryStore("test")
    store.mark_synced()
    discovery = DiscoveryServer(store, settings=FAST)
    admin = AdminServer(
        build_admin_app(DiscoveryDebugView(discovery), rest=RestDiscovery(discovery)),
        shutdown_timeout=0.25,
    )
    port = await admin.start("127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as session:
            padded = {**envoy_request(), "pad": "x" * (3 << 20)}
            async with session.post(
                f"http://127.0.0.1:{port}/v3/discovery:clusters", json=padded
            ) as response:
                assert response.status == 503  # read and parsed up to readiness: not a 413
            oversized = b" " * ((4 << 20) + 1)
            async with session.post(
                f"http://127.0.0.1:{port}/v3/discovery:clusters",
                data=oversized,
                headers={"content-type": "application/json"},
            ) as response:
                assert response.status == 413
    finally:
        await admin.stop()
        discovery.close()


# -- readiness --------------------------------------------------------------------------


async def test_not_ready_until_synced_then_ready() -> None:
    async with running_plane(synced=False) as plane:
        assert await plane.get("/healthz") == (200, "ok\n")
        status, text = await plane.get("/ready")
        assert status == 503
        assert "config sources have not synced" in text and "no PushContext" in text
        status, raw = await plane.post("clusters", envoy_request())
        assert status == 503 and "not ready" in error_of(raw)

        await plane.start_discovery()
        assert await plane.get("/ready") == (200, "ok\n")
        status, _ = await plane.post("clusters", envoy_request())
        assert status == 200


async def test_extra_readiness_checks_and_routes() -> None:
    from aiohttp import web

    store = MemoryStore("test")
    store.mark_synced()
    discovery = DiscoveryServer(store, settings=FAST)
    webhook_ready: list[str | None] = ["validation webhook has no certificate"]

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text="pilot_xds 0\n")

    app = build_admin_app(
        DiscoveryDebugView(discovery),
        [lambda: webhook_ready[0]],
        rest=RestDiscovery(discovery),
        routes=[web.get("/metrics", metrics)],
    )
    admin = AdminServer(app)
    port = await admin.start("127.0.0.1", 0)
    task = asyncio.create_task(discovery.run())
    try:
        await asyncio.wait_for(discovery.wait_ready(), 10)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/ready") as response:
                assert response.status == 503
                text = await response.text()
                assert text == "not ready:\nvalidation webhook has no certificate\n"
            webhook_ready[0] = None
            async with session.get(f"http://127.0.0.1:{port}/ready") as response:
                assert response.status == 200
            async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                assert await response.text() == "pilot_xds 0\n"
        # A second server on the same port fails loudly.
        other = AdminServer(build_admin_app(DiscoveryDebugView(discovery)))
        with pytest.raises(OSError):
            await other.start("127.0.0.1", port)
    finally:
        await admin.stop()
        discovery.close()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


# -- remembered answers -----------------------------------------------------------------


def encoded(request: dict[str, Any]) -> bytes:
    return json.dumps(request).encode()


def with_fields(**fields: Any) -> bytes:
    return encoded({**envoy_request(), **fields})


def requests_to_compare(cds_version: str) -> list[tuple[str, bytes]]:
    """Plain polls first (so their node is known), then everything unusual, including
    malformed requests from a known node."""
    nack = envoy_request(names=(CART,))
    nack["error_detail"] = {"code": 3, "message": "bad endpoint"}
    camel = {"node": {"id": NODE, "userAgentName": "envoy"}, "resourceNames": [CART]}
    # json.loads makes "\ud800" an unpaired surrogate, which no protobuf string takes
    unpaired = encoded(envoy_request()).replace(b'"node"', b'"version_info": "\\ud800", "node"')
    return [
        ("clusters", encoded(envoy_request())),
        ("clusters", encoded(envoy_request(extensions=3))),
        ("clusters", encoded(envoy_request(version=cds_version))),
        ("clusters", encoded(envoy_request(version="older", names=(CART,)))),
        ("endpoints", encoded(envoy_request(names=(CART,)))),
        ("endpoints", encoded(envoy_request(names=(DB, CART, CART)))),
        ("endpoints", encoded(envoy_request())),
        ("listeners", encoded(envoy_request())),
        ("routes", encoded(envoy_request(names=("8080",)))),
        ("endpoints", encoded(nack)),
        ("endpoints", encoded(camel)),
        ("clusters", with_fields(type_url=CDS, response_nonce="n-1")),
        ("clusters", with_fields(unknown_field={"a": 1})),  # ignored, as ParseDict does
        ("clusters", with_fields(version_info=7)),
        ("clusters", with_fields(version_info=None)),
        ("clusters", with_fields(resource_names="x")),
        ("clusters", with_fields(type_url=EDS)),
        ("clusters", with_fields(node=None)),
        ("clusters", with_fields(node={"id": ""})),
        ("clusters", with_fields(versionInfo="x", version_info="y")),
        ("clusters", with_fields(error_detail="not a status")),
        ("clusters", unpaired),
        ("clusters", encoded(envoy_request("not-an-istio-id"))),
        ("clusters", b"{not json"),
        ("clusters", b"[1, 2]"),
        ("secretz", encoded(envoy_request())),
    ]


async def test_remembered_answers_equal_answers_worked_out_afresh(plane: Plane) -> None:
    version = json.loads(plane.rest.answer("clusters", encoded(envoy_request())).body)[
        "version_info"
    ]
    warm = RestDiscovery(plane.discovery)
    requests = requests_to_compare(version)
    for _ in range(3):  # the first round fills the memory, the others answer from it
        for kind, body in requests:
            afresh = RestDiscovery(plane.discovery).answer(kind, body)
            remembered = warm.answer(kind, body)
            assert (remembered.status, remembered.body) == (afresh.status, afresh.body), body
    statuses = {RestDiscovery(plane.discovery).answer(k, b).status for k, b in requests}
    assert statuses == {200, 304, 400, 404}
    assert warm.answers.hits > 0 and warm.nodes.hits > 0
    # A NACK is counted every time it comes (ParseDict takes a string as error_detail).
    assert warm.stats.nacks == {"EDS": 3, "CDS": 3}
    assert warm.stats.requests == 3 * len(requests)


async def test_an_endpoint_change_shows_at_once(plane: Plane) -> None:
    rest = plane.rest
    request = encoded(envoy_request(names=(CART,)))
    first = rest.answer("endpoints", request)
    assert rest.answer("endpoints", request) is first  # from memory
    version = json.loads(first.body)["version_info"]

    apply(plane.store, workload("10.1.0.2", 18081))  # no await: no push has run yet

    changed = rest.answer("endpoints", request)
    assert endpoints_of(json.loads(changed.body)) == {CART: [("10.1.0.2", 18081)]}
    assert changed.body == RestDiscovery(plane.discovery).answer("endpoints", request).body
    again = encoded(envoy_request(names=(CART,), version=version))
    assert rest.answer("endpoints", again).status == 200


async def test_a_new_push_context_is_followed(plane: Plane) -> None:
    rest = plane.rest
    request = encoded(envoy_request())
    before = rest.answer("clusters", request)
    old = plane.discovery.context
    apply(plane.store, SERVICES.replace("number: 8080", "number: 8081"))

    async def rebuilt() -> bool:
        return plane.discovery.context is not old

    await wait_for(rebuilt)
    after = rest.answer("clusters", request)
    assert after.body != before.body
    assert f"outbound|8081||{HOST}" in clusters_of(json.loads(after.body))
    assert after.body == RestDiscovery(plane.discovery).answer("clusters", request).body


async def test_a_generator_registered_later_is_used(plane: Plane) -> None:
    rest = plane.rest
    request = encoded(envoy_request())
    assert len(json.loads(rest.answer("clusters", request).body)["resources"]) == 4

    class NoClusters:
        type_url = CDS

        def generate(self, given: Any) -> dict[str, Any]:
            return {}

    plane.discovery.register_generator(NoClusters())
    assert json.loads(rest.answer("clusters", request).body)["resources"] == []


async def test_an_unchanged_answer_is_not_generated_again(plane: Plane) -> None:
    rest = plane.rest
    _, body = await plane.discover("clusters")
    cache = plane.discovery.cache.stats
    looked_up = cache.hits + cache.misses
    # A new body (it carries the version) with the same answer: no generation, a 304.
    status, raw = await plane.post("clusters", envoy_request(version=body["version_info"]))
    assert status == 304 and raw == b""
    status, _ = await plane.post("clusters", envoy_request(version=body["version_info"]))
    assert status == 304
    assert cache.hits + cache.misses == looked_up
    assert rest.answers.hits == 1 and rest.versions.hits == 1
    assert rest.stats.not_modified == 2


async def test_remembering_is_bounded(plane: Plane) -> None:
    rest = RestDiscovery(plane.discovery, RestSettings(answer_cache_entries=2))
    for i in range(6):
        node = f"sidecar~10.0.0.{i}~app-{i}.shop~shop.svc.cluster.local"
        for _ in range(2):
            answer = rest.answer("clusters", encoded(envoy_request(node)))
            assert answer.status == 200 and len(json.loads(answer.body)["resources"]) == 4
    for memory in (rest.answers, rest.versions, rest.bodies, rest.nodes):
        assert len(memory) <= 2
    # Answers too large for the byte budget are not kept, and still right.
    request = encoded(envoy_request())
    small = RestDiscovery(plane.discovery, RestSettings(answer_cache_bytes=1024))
    for _ in range(2):
        answer = small.answer("clusters", request)
        assert answer.body == rest.answer("clusters", request).body
    assert len(small.answers) == 0 and len(small.bodies) == 0
