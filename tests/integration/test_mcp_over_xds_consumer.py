"""pilothouse consuming MCP-over-xDS from pilothouse: an XdsUpstreamSource pointed at an
in-process server mirrors the server's store (add, update, delete), NACKs what does not
validate while keeping the rest, keeps its state while the server is down, and
resynchronises when a server comes back on the same port."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

import pytest

from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.backoff import Backoff
from pilothouse.config.model import Config, ConfigKey, Origin
from pilothouse.kinds.table import SCHEMAS
from pilothouse.sources.memory import MemoryStore
from pilothouse.sources.xds_upstream import UpstreamSettings, XdsUpstreamSource
from tests.e2e.harness.control_plane import ControlPlane

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
kind: DestinationRule
metadata: {name: httpbin, namespace: shop}
spec:
  host: httpbin.shop.svc.cluster.local
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: vm-1, namespace: shop}
spec: {address: 10.0.0.9, labels: {app: httpbin, version: v1}}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: istio-system}
spec: {mtls: {mode: STRICT}}
"""
FAST = UpstreamSettings(backoff=Backoff(initial=0.05, maximum=0.3))
KINDS = SCHEMAS.kinds
SE_TYPE = "networking.istio.io/v1/ServiceEntry"


def content(store: MemoryStore) -> dict[ConfigKey, tuple[bytes, dict[str, str]]]:
    return {
        config.key: (config.spec.SerializeToString(deterministic=True), dict(config.labels))
        for kind in KINDS
        for config in store.configs(kind)
    }


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


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
async def consumer(plane: ControlPlane) -> AsyncIterator[XdsUpstreamSource]:
    source = XdsUpstreamSource("127.0.0.1", plane.port, settings=FAST)
    task = asyncio.create_task(source.run())
    try:
        await eventually(source.has_synced)
        yield source
    finally:
        source.close()
        await asyncio.wait_for(task, 5)


def mirrored(plane: ControlPlane, consumer: XdsUpstreamSource) -> Callable[[], bool]:
    return lambda: content(consumer.store) == content(plane.store)


async def test_consumer_mirrors_the_server(
    plane: ControlPlane, consumer: XdsUpstreamSource
) -> None:
    assert content(consumer.store) == content(plane.store)
    assert len(consumer.store) == 4
    held = consumer.store.get(ConfigKey("ServiceEntry", "shop", "httpbin"))
    served = plane.store.get(ConfigKey("ServiceEntry", "shop", "httpbin"))
    assert held is not None and served is not None
    assert held.resource_version == served.resource_version
    assert held.origin == Origin(f"xds://127.0.0.1:{plane.port}")
    assert consumer.mesh_config is not None
    assert consumer.mesh_config.root_namespace == "istio-system"
    connection = plane.only_connection()
    assert connection.proxy.generator == "api"
    assert connection.proxy.node_id == FAST.node_id

    plane.apply_yaml(MESH.split("---\n")[0].replace("name: httpbin,", "name: echo,")
                     .replace("httpbin.shop", "echo.shop"))  # fmt: skip
    await eventually(mirrored(plane, consumer))
    assert consumer.store.get(ConfigKey("ServiceEntry", "shop", "echo")) is not None

    plane.apply_yaml(MESH.split("---\n")[2].replace("10.0.0.9", "10.0.0.10"))
    await eventually(mirrored(plane, consumer))

    plane.delete("DestinationRule", "shop", "httpbin")
    await eventually(mirrored(plane, consumer))
    assert consumer.store.get(ConfigKey("DestinationRule", "shop", "httpbin")) is None


async def test_invalid_object_is_nacked_by_name_and_the_rest_stays(
    plane: ControlPlane, consumer: XdsUpstreamSource
) -> None:
    bad = service_entry_pb2.ServiceEntry()  # no hosts: the validator refuses it
    plane.store.apply(
        Config(kind="ServiceEntry", name="broken", namespace="shop", spec=bad, origin=Origin("t"))
    )
    plane.apply_yaml(MESH.split("---\n")[0].replace("app: httpbin", "app: httpbin-2"))
    connection = plane.only_connection()
    assert connection.sotw is not None

    def nacked() -> bool:
        watch = connection.sotw.watch(SE_TYPE) if connection.sotw else None
        return watch is not None and watch.last_error is not None

    await eventually(nacked)
    watch = connection.sotw.watch(SE_TYPE)
    assert watch is not None and watch.last_error is not None
    assert watch.last_error.code == 3
    assert watch.last_error.message.startswith("shop/broken: ")
    assert "hosts" in watch.last_error.message
    held = consumer.store.get(ConfigKey("ServiceEntry", "shop", "httpbin"))
    assert held is not None and dict(held.labels) == {"app": "httpbin-2"}
    assert consumer.store.get(ConfigKey("ServiceEntry", "shop", "broken")) is None
    assert [r.name for r in consumer.status().rejections[SE_TYPE]] == ["shop/broken"]

    plane.delete("ServiceEntry", "shop", "broken")
    await eventually(lambda: SE_TYPE not in consumer.status().rejections)
    await eventually(lambda: connection.sotw is not None and not nacked())
    assert content(consumer.store) == content(plane.store)


async def test_consumer_keeps_its_state_while_the_server_is_down_and_resyncs(
    plane: ControlPlane, consumer: XdsUpstreamSource
) -> None:
    port = plane.port
    before = content(consumer.store)
    await plane.stop()
    await eventually(lambda: not consumer.status().connected)
    await asyncio.sleep(0.5)  # several failed redials
    assert content(consumer.store) == before
    assert consumer.has_synced()
    assert consumer.status().failures >= 1

    restarted = ControlPlane()
    restarted.apply_yaml(MESH.split("---\n")[0].replace("10.0.0.7", "10.0.0.70"))
    await restarted.start(port)
    try:
        await eventually(mirrored(restarted, consumer), timeout=10)
        assert len(consumer.store) == 1
        assert consumer.status().connected
        assert consumer.status().last_error == ""
    finally:
        await restarted.stop()


async def test_close_stops_a_source_that_never_connected() -> None:
    source = XdsUpstreamSource("127.0.0.1", 1, settings=FAST)
    task = asyncio.create_task(source.run())
    await eventually(lambda: source.status().failures >= 2)
    assert not source.has_synced()
    assert source.status().last_error.startswith("UNAVAILABLE")
    source.close()
    await asyncio.wait_for(task, 2)


async def test_cancelling_run_cancels_the_stream(plane: ControlPlane) -> None:
    source = XdsUpstreamSource("127.0.0.1", plane.port, settings=FAST)
    task = asyncio.create_task(source.run())
    await eventually(source.has_synced)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, 2)
    await eventually(lambda: not plane.connections())


async def test_a_response_that_raises_is_nacked_and_the_next_one_applies(
    plane: ControlPlane, consumer: XdsUpstreamSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faults stop at the response: the decoder raising (made here by patching it, as a
    stand-in for a bug) NACKs that one response with INTERNAL and a clear message; the
    last good objects stay, the stream stays up, and the next response applies."""
    from pilothouse.sources.upstream_resources import KindDecoder

    real = KindDecoder.decode
    raised: list[str] = []

    def decode_failing_once(self: KindDecoder, resources: object) -> object:
        if self.schema.kind == "ServiceEntry" and not raised:
            raised.append(self.schema.kind)
            raise RuntimeError("decoder bug")
        return real(self, resources)  # type: ignore[arg-type]

    monkeypatch.setattr(KindDecoder, "decode", decode_failing_once)
    connection = plane.only_connection()
    before = consumer.store.get(ConfigKey("ServiceEntry", "shop", "httpbin"))
    assert before is not None
    plane.apply_yaml(MESH.split("---\n")[0].replace("app: httpbin", "app: httpbin-2"))

    def nack() -> object:
        watch = connection.sotw.watch(SE_TYPE) if connection.sotw else None
        return None if watch is None else watch.last_error

    await eventually(lambda: nack() is not None)
    error = nack()
    assert error is not None and error.code == 13  # type: ignore[attr-defined]
    message = error.message  # type: ignore[attr-defined]
    assert "failed to apply 1 resource(s) of " + SE_TYPE in message
    assert "last good config is kept" in message and "decoder bug" not in message
    assert consumer.store.get(ConfigKey("ServiceEntry", "shop", "httpbin")) is before

    plane.apply_yaml(MESH.split("---\n")[0].replace("app: httpbin", "app: httpbin-3"))
    await eventually(mirrored(plane, consumer))
    held = consumer.store.get(ConfigKey("ServiceEntry", "shop", "httpbin"))
    assert held is not None and dict(held.labels) == {"app": "httpbin-3"}
    assert plane.only_connection() is connection  # the same stream all along
    assert consumer.status().failures == 0 and consumer.status().connected
