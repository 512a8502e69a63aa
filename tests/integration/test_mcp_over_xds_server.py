"""pilothouse as an MCP-over-xDS server, driven by a raw gRPC client that sends exactly what
istiod's adsc sends: a node with ``GENERATOR=api``, ``core/v1alpha1/MeshConfig`` first, then
one request per kind, each carrying ``response_nonce = time.Now().String()`` (a nonce the
server never issued), then an ACK per response (none for MeshConfig)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.config.model import ConfigKey
from pilothouse.xds.server.ads import ADS_SERVICE
from tests.e2e.harness.control_plane import ControlPlane

NODE = "sidecar~10.0.0.20~istiod-7d9f.istio-system~istio-system.svc.cluster.local"
MESH_CONFIG = "core/v1alpha1/MeshConfig"
ISTIOD_124_TYPES = (
    "security.istio.io/v1/AuthorizationPolicy",
    "security.istio.io/v1/PeerAuthentication",
    "security.istio.io/v1/RequestAuthentication",
    "networking.istio.io/v1/DestinationRule",
    "networking.istio.io/v1/Gateway",
    "networking.istio.io/v1/ServiceEntry",
    "networking.istio.io/v1/Sidecar",
    "networking.istio.io/v1/VirtualService",
    "networking.istio.io/v1/WorkloadEntry",
    "networking.istio.io/v1/WorkloadGroup",
    "networking.istio.io/v1alpha3/EnvoyFilter",
    "networking.istio.io/v1beta1/ProxyConfig",
    "telemetry.istio.io/v1/Telemetry",
    "extensions.istio.io/v1alpha1/WasmPlugin",
    "extensions.istio.io/v1alpha1/TrafficExtension",
)
SE_TYPE = "networking.istio.io/v1/ServiceEntry"

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: shop, labels: {app: httpbin}}
spec:
  hosts: [httpbin.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8000, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.7, ports: {http: 18000}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: httpbin, namespace: shop}
spec:
  hosts: [httpbin.shop.svc.cluster.local]
  exportTo: ["."]
  http: [{route: [{destination: {host: httpbin.shop.svc.cluster.local}}]}]
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: istio-system}
spec: {mtls: {mode: STRICT}}
"""

ECHO = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: echo, namespace: other}
spec:
  hosts: [echo.other.svc.cluster.local]
  exportTo: ["."]
  resolution: STATIC
  ports: [{number: 7000, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.0.8}]
"""


def go_time_nonce() -> str:
    """What Go's ``time.Now().String()`` looks like: never a nonce pilothouse issued."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now))
    return f"{stamp}.{int(now % 1 * 1e9):09d} +0000 UTC m=+0.0{int(now * 1000) % 1000:03d}"


class IstiodLikeClient:
    """An ADS stream whose responses are collected by a reader task."""

    def __init__(self, port: int) -> None:
        self._channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        self._call: Any = self._channel.stream_stream(
            f"/{ADS_SERVICE}/StreamAggregatedResources",
            request_serializer=discovery_pb2.DiscoveryRequest.SerializeToString,
            response_deserializer=discovery_pb2.DiscoveryResponse.FromString,
        )()
        self.responses: asyncio.Queue[Any] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            response = await self._call.read()
            if response is grpc.aio.EOF:
                return
            await self.responses.put(response)

    async def send(
        self, type_url: str, *, node: bool = False, nonce: str = "", version: str = ""
    ) -> None:
        request = discovery_pb2.DiscoveryRequest(
            type_url=type_url, response_nonce=nonce, version_info=version
        )
        if node:
            request.node.id = NODE
            request.node.metadata.update({"GENERATOR": "api", "ISTIO_VERSION": "65536.65536.65536"})
        await self._call.write(request)

    async def ack(self, response: Any) -> None:
        await self.send(response.type_url, nonce=response.nonce, version=response.version_info)

    async def next(self, timeout: float = 5.0) -> Any:
        return await asyncio.wait_for(self.responses.get(), timeout)

    async def istiod_handshake(self, types: tuple[str, ...]) -> dict[str, Any]:
        """The initial requests, every response ACKed (MeshConfig aside), by type."""
        await self.send(MESH_CONFIG, node=True, nonce=go_time_nonce())
        for type_url in types:
            await self.send(type_url, nonce=go_time_nonce())
        answered: dict[str, Any] = {}
        while len(answered) < len(types) + 1:
            response = await self.next()
            assert response.type_url not in answered, f"{response.type_url} answered twice"
            answered[response.type_url] = response
            if response.type_url != MESH_CONFIG:
                await self.ack(response)
        return answered

    async def close(self) -> None:
        self._call.cancel()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)
        await self._channel.close()


def unwrap(response: Any) -> dict[str, resource_pb2.Resource]:
    out: dict[str, resource_pb2.Resource] = {}
    for entry in response.resources:
        assert entry.type_url == "type.googleapis.com/istio.mcp.v1alpha1.Resource"
        resource = resource_pb2.Resource.FromString(entry.value)
        out[resource.metadata.name] = resource
    return out


def hosts_of(response: Any) -> dict[str, list[str]]:
    return {
        name: list(service_entry_pb2.ServiceEntry.FromString(r.body.value).hosts)
        for name, r in unwrap(response).items()
    }


@pytest.fixture
async def plane() -> AsyncIterator[ControlPlane]:
    control_plane = ControlPlane()
    control_plane.apply_yaml(MESH)
    await control_plane.start()
    try:
        yield control_plane
    finally:
        await control_plane.stop()


@pytest.fixture
async def client(plane: ControlPlane) -> AsyncIterator[IstiodLikeClient]:
    istiod = IstiodLikeClient(plane.port)
    try:
        yield istiod
    finally:
        await istiod.close()


async def test_every_requested_type_is_answered_in_its_own_spelling(
    plane: ControlPlane, client: IstiodLikeClient
) -> None:
    answered = await client.istiod_handshake(ISTIOD_124_TYPES)
    assert set(answered) == {MESH_CONFIG, *ISTIOD_124_TYPES}
    for type_url in (
        "networking.istio.io/v1alpha3/EnvoyFilter",
        "telemetry.istio.io/v1/Telemetry",
        "security.istio.io/v1/AuthorizationPolicy",
        "networking.istio.io/v1/Gateway",
    ):
        assert list(answered[type_url].resources) == [], type_url
    assert all(r.nonce and r.version_info for r in answered.values())

    (mesh,) = answered[MESH_CONFIG].resources
    assert mesh.type_url == "type.googleapis.com/istio.mesh.v1alpha1.MeshConfig"
    assert config_pb2.MeshConfig.FromString(mesh.value).root_namespace == "istio-system"

    entries = unwrap(answered[SE_TYPE])
    assert list(entries) == ["shop/httpbin"]
    entry = entries["shop/httpbin"]
    held = plane.store.get(ConfigKey("ServiceEntry", "shop", "httpbin"))
    assert held is not None
    assert entry.body.type_url == "type.googleapis.com/istio.networking.v1alpha3.ServiceEntry"
    assert service_entry_pb2.ServiceEntry.FromString(entry.body.value) == held.spec
    assert entry.metadata.version == held.resource_version
    assert dict(entry.metadata.labels) == {"app": "httpbin"}
    assert list(unwrap(answered["networking.istio.io/v1/VirtualService"])) == ["shop/httpbin"]
    assert list(unwrap(answered["security.istio.io/v1/PeerAuthentication"])) == [
        "istio-system/default"
    ]


async def test_istiod_18_spellings_are_echoed(
    plane: ControlPlane, client: IstiodLikeClient
) -> None:
    old = (
        "networking.istio.io/v1alpha3/ServiceEntry",
        "security.istio.io/v1beta1/PeerAuthentication",
        "networking.istio.io/v1beta1/ServiceEntry",
    )
    answered = await client.istiod_handshake(old)
    assert set(answered) == {MESH_CONFIG, *old}
    assert list(unwrap(answered[old[0]])) == ["shop/httpbin"]
    assert unwrap(answered[old[0]]) == unwrap(answered[old[2]])
    assert list(unwrap(answered[old[1]])) == ["istio-system/default"]


async def test_acks_get_no_response(plane: ControlPlane, client: IstiodLikeClient) -> None:
    await client.istiod_handshake(ISTIOD_124_TYPES)
    await asyncio.sleep(0.3)
    assert client.responses.empty()
    connection = plane.only_connection()
    assert connection.sotw is not None
    watch = connection.sotw.watch(SE_TYPE)
    assert watch is not None and watch.nonce_acked == watch.nonce_sent


async def test_a_change_re_pushes_the_full_state_of_that_kind_only(
    plane: ControlPlane, client: IstiodLikeClient
) -> None:
    await client.istiod_handshake(ISTIOD_124_TYPES)
    plane.apply_yaml(ECHO)
    pushed = await client.next()
    assert pushed.type_url == SE_TYPE
    assert hosts_of(pushed) == {
        "shop/httpbin": ["httpbin.shop.svc.cluster.local"],
        "other/echo": ["echo.other.svc.cluster.local"],
    }
    await client.ack(pushed)
    await asyncio.sleep(0.3)
    assert client.responses.empty(), "only the changed kind is pushed"

    plane.apply_yaml(ECHO.replace("echo.other.svc", "echo2.other.svc"))
    updated = await client.next()
    assert updated.type_url == SE_TYPE
    assert hosts_of(updated)["other/echo"] == ["echo2.other.svc.cluster.local"]
    await client.ack(updated)

    plane.delete("ServiceEntry", "other", "echo")
    after_delete = await client.next()
    assert after_delete.type_url == SE_TYPE
    assert list(hosts_of(after_delete)) == ["shop/httpbin"]


async def test_changes_invisible_to_a_sidecar_scope_still_reach_api_clients(
    plane: ControlPlane, client: IstiodLikeClient
) -> None:
    """VirtualService exported only to its namespace, a label-only ServiceEntry edit, and a
    WorkloadEntry that selects nothing: none changes Envoy config in istio-system."""
    await client.istiod_handshake(ISTIOD_124_TYPES)
    plane.apply_yaml(MESH.split("---\n")[1].replace("[{route", "[{timeout: 2s, route"))
    pushed = await client.next()
    assert pushed.type_url == "networking.istio.io/v1/VirtualService"
    await client.ack(pushed)

    plane.apply_yaml(MESH.split("---\n")[0].replace("app: httpbin", "app: httpbin2"))
    pushed = await client.next()
    assert pushed.type_url == SE_TYPE
    assert dict(unwrap(pushed)["shop/httpbin"].metadata.labels) == {"app": "httpbin2"}
    await client.ack(pushed)

    plane.apply_yaml(
        "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\n"
        "metadata: {name: vm-1, namespace: other}\nspec: {address: 10.9.9.9, labels: {app: vm}}\n"
    )
    pushed = await client.next()
    assert pushed.type_url == "networking.istio.io/v1/WorkloadEntry"
    assert list(unwrap(pushed)) == ["other/vm-1"]


async def test_a_first_request_with_an_unknown_nonce_is_answered(plane: ControlPlane) -> None:
    client = IstiodLikeClient(plane.port)
    try:
        await client.send(SE_TYPE, node=True, nonce="nonce-this-server-never-issued", version="v9")
        response = await client.next()
        assert response.type_url == SE_TYPE
        assert list(unwrap(response)) == ["shop/httpbin"]
        assert response.nonce != "nonce-this-server-never-issued"
    finally:
        await client.close()


def create_times(response: Any) -> dict[str, Any]:
    times = {}
    for name, resource in unwrap(response).items():
        assert resource.metadata.HasField("create_time"), f"{name} has no create_time"
        times[name] = resource.metadata.create_time.ToDatetime()
    return times


async def test_served_resources_carry_a_create_time_that_stays(
    plane: ControlPlane, client: IstiodLikeClient
) -> None:
    """No object here has a creationTimestamp: each gets the time pilothouse first saw it,
    the same on every push, through edits of other objects and of the object itself."""
    answered = await client.istiod_handshake(ISTIOD_124_TYPES)
    first = create_times(answered[SE_TYPE])
    assert list(first) == ["shop/httpbin"]
    for type_url in (
        "networking.istio.io/v1/VirtualService",
        "security.istio.io/v1/PeerAuthentication",
    ):
        assert create_times(answered[type_url])

    plane.apply_yaml(ECHO)  # an unrelated edit: a second push of the kind
    pushed = await client.next()
    await client.ack(pushed)
    second = create_times(pushed)
    assert second["shop/httpbin"] == first["shop/httpbin"]
    assert second["other/echo"] >= first["shop/httpbin"]

    plane.apply_yaml(ECHO.replace("echo.other.svc", "echo2.other.svc"))  # the object itself
    updated = await client.next()
    await client.ack(updated)
    assert hosts_of(updated)["other/echo"] == ["echo2.other.svc.cluster.local"]
    echo_versions = {unwrap(r)["other/echo"].metadata.version for r in (pushed, updated)}
    assert len(echo_versions) == 2
    assert create_times(updated) == second
