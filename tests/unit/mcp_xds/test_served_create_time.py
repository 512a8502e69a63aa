"""Every served MCP resource carries ``metadata.create_time``, stable across pushes.

Both ways pilothouse serves Istio config: MCP-over-xDS (the ``api`` generator) and legacy
MCP (the snapshot publisher). The served bytes are decoded with the project's Istio
protos. ``create_time`` is the object's ``creationTimestamp`` when it has one, else when
pilothouse first saw the object: the same on every push, untouched by edits to other
objects, kept when the object itself changes, new when it is deleted and created again.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator

from google.protobuf import any_pb2

from pilothouse.api.istio.mcp.v1alpha1 import resource_pb2
from pilothouse.api.istio.networking.v1alpha3 import service_entry_pb2
from pilothouse.config.model import Config, ConfigKey
from pilothouse.mcp.publisher import McpSourceOptions, SnapshotPublisher
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.api import ApiGenerator
from tests.unit.mcp_xds.mesh_objects import SERVICE_ENTRY, load
from tests.unit.mcp_xds.test_api_generator import generate

SE_TYPE = "networking.istio.io/v1/ServiceEntry"
SE_COLLECTION = "istio/networking/v1alpha3/serviceentries"
STAMPED = datetime.datetime(2025, 3, 4, 5, 6, 7, tzinfo=datetime.UTC)
"""The ``creationTimestamp`` of SERVICE_ENTRY (``shop/httpbin``)."""
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


class SteppingClock:
    """A wall clock one second later at every reading, so any extra reading shows."""

    def __init__(self) -> None:
        self._times: Iterator[datetime.datetime] = (
            START + datetime.timedelta(seconds=n) for n in range(1_000_000)
        )
        self.readings: list[datetime.datetime] = []

    def __call__(self) -> datetime.datetime:
        now = next(self._times)
        self.readings.append(now)
        return now


def unstamped(name: str, host: str) -> Config:
    """A ServiceEntry in ``shop`` without a ``creationTimestamp``."""
    text = SERVICE_ENTRY.replace("httpbin\n", f"{name}\n", 1)
    text = text.replace('  creationTimestamp: "2025-03-04T05:06:07Z"\n', "")
    text = text.replace("[httpbin.shop.svc.cluster.local]", f"[{host}]")
    config = load(text, resource_version="")
    assert config.creation_time is None
    return config


def mesh_store() -> MemoryStore:
    store = MemoryStore("fs:///mesh")
    store.apply(load(SERVICE_ENTRY, resource_version=""))
    store.apply(unstamped("echo", "echo.shop.svc.cluster.local"))
    store.apply(unstamped("ratings", "ratings.shop.svc.cluster.local"))
    store.mark_synced()
    return store


def decoded(resource_bytes: bytes) -> resource_pb2.Resource:
    resource = resource_pb2.Resource.FromString(resource_bytes)
    assert resource.body.Is(service_entry_pb2.ServiceEntry.DESCRIPTOR)
    return resource


def create_times(resources: dict[str, resource_pb2.Resource]) -> dict[str, datetime.datetime]:
    times = {}
    for name, resource in resources.items():
        assert resource.metadata.HasField("create_time"), name
        times[name] = resource.metadata.create_time.ToDatetime(tzinfo=datetime.UTC)
    return times


def api_push(api: ApiGenerator, store: MemoryStore) -> dict[str, resource_pb2.Resource]:
    """One MCP-over-xDS answer for ServiceEntry, decoded."""
    served = generate(api, SE_TYPE, store)
    out = {}
    for name, resource in served.items():
        entry = any_pb2.Any.FromString(resource.body)
        out[name] = decoded(entry.value)
    return out


def test_api_create_time_is_set_and_stable_across_pushes_and_edits() -> None:
    store = mesh_store()
    clock = SteppingClock()
    api = ApiGenerator(store, clock=clock)
    first = create_times(api_push(api, store))
    assert first["shop/httpbin"] == STAMPED
    assert first["shop/echo"] == first["shop/ratings"] == clock.readings[0]
    assert len(clock.readings) == 1  # one reading for everything new in one pass

    assert create_times(api_push(api, store)) == first  # a second push

    store.apply(unstamped("ratings", "moved.shop.svc.cluster.local"))  # an edit elsewhere
    after_edit = api_push(api, store)
    assert create_times(after_edit) == first
    moved = service_entry_pb2.ServiceEntry.FromString(after_edit["shop/ratings"].body.value)
    assert moved.hosts == ["moved.shop.svc.cluster.local"]

    store.apply(unstamped("echo", "echo2.shop.svc.cluster.local"))  # the object itself
    changed = api_push(api, store)
    assert service_entry_pb2.ServiceEntry.FromString(changed["shop/echo"].body.value).hosts == [
        "echo2.shop.svc.cluster.local"
    ]
    assert create_times(changed) == first


def test_api_cached_bytes_are_reused_and_a_recreated_object_is_new() -> None:
    store = mesh_store()
    clock = SteppingClock()
    api = ApiGenerator(store, clock=clock)
    before = generate(api, SE_TYPE, store)
    store.apply(unstamped("ratings", "moved.shop.svc.cluster.local"))
    after = generate(api, SE_TYPE, store)
    assert after["shop/echo"] is before["shop/echo"]  # the unrelated object is not re-encoded
    assert after["shop/ratings"].version != before["shop/ratings"].version
    readings = len(clock.readings)
    first = create_times(api_push(api, store))

    store.delete(ConfigKey("ServiceEntry", "shop", "echo"))
    assert "shop/echo" not in api_push(api, store)
    store.apply(unstamped("echo", "echo.shop.svc.cluster.local"))
    again = create_times(api_push(api, store))
    assert again["shop/echo"] > first["shop/echo"]
    assert again["shop/echo"] == clock.readings[-1] and len(clock.readings) == readings + 1


def legacy_push(publisher: SnapshotPublisher) -> dict[str, resource_pb2.Resource]:
    """The ServiceEntry collection as a legacy MCP source publishes it, decoded."""
    publisher.publish([SE_COLLECTION])
    snapshot = publisher.cache.get(SE_COLLECTION)
    assert snapshot is not None
    return {name: decoded(r.encoded) for name, r in snapshot.resources.items()}


def test_legacy_create_time_is_set_and_stable_across_pushes_and_edits() -> None:
    store = mesh_store()
    clock = SteppingClock()
    publisher = SnapshotPublisher(store, options=McpSourceOptions(), wall_clock=clock)
    assert publisher.demand()
    first = create_times(legacy_push(publisher))
    assert set(first) == {"shop/httpbin", "shop/echo", "shop/ratings"}
    assert first["shop/httpbin"] == STAMPED
    assert first["shop/echo"] == first["shop/ratings"] == clock.readings[0]

    assert create_times(legacy_push(publisher)) == first  # a second push

    store.apply(unstamped("ratings", "moved.shop.svc.cluster.local"))  # an edit elsewhere
    assert create_times(legacy_push(publisher)) == first

    store.apply(unstamped("echo", "echo2.shop.svc.cluster.local"))  # the object itself
    changed = legacy_push(publisher)
    assert changed["shop/echo"].metadata.version != ""
    assert create_times(changed) == first


async def test_legacy_recreated_object_is_new() -> None:
    store = mesh_store()
    clock = SteppingClock()
    publisher = SnapshotPublisher(store, options=McpSourceOptions(), wall_clock=clock)
    running = asyncio.create_task(publisher.run())
    await asyncio.sleep(0)  # subscribed
    assert publisher.demand()
    first = create_times(legacy_push(publisher))
    store.delete(ConfigKey("ServiceEntry", "shop", "echo"))
    assert "shop/echo" not in legacy_push(publisher)
    store.apply(unstamped("echo", "echo.shop.svc.cluster.local"))
    again = create_times(legacy_push(publisher))
    assert again["shop/echo"] == clock.readings[-1] > first["shop/echo"]
    assert again["shop/ratings"] == first["shop/ratings"]
    publisher.close()
    await asyncio.wait_for(running, 5)
