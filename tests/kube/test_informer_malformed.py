"""Answers no real API server should give, contained per object, per event and per list.

The API server is the fake of :mod:`tests.kube.fake_apiserver` (a fake: no real API
server can run here), told to answer a list with given bytes
(:meth:`~tests.kube.fake_apiserver.FakeApiServer.script_list`) or to write a given line
into a watch (:meth:`~tests.kube.fake_apiserver.FakeApiServer.send_raw`); everything
else is its real list/watch protocol over HTTP.

- a list item or watch event of the wrong shape is skipped and logged; the good ones
  around it are delivered, the watch goes on, and an object held before keeps its last
  good version;
- a list answer that is not a list (no ``items``, ...) fails the list: nothing held is
  withdrawn, the informer (and the ``k8s://`` source) says why, and it is tried again;
- a flood of malformed events logs a bounded number of lines;
- the mesh ConfigMap keeps its last good settings through both, and its first read
  does not wait for an API server that refuses connections.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from pilothouse.backoff import Backoff
from pilothouse.config.model import ConfigKey
from pilothouse.settings import KubeSettings
from pilothouse.sources.addresses import build_source
from pilothouse.sources.kubernetes.client import new_api_client
from pilothouse.sources.kubernetes.config_source import KubeConfigSource
from pilothouse.sources.kubernetes.informer import Informer
from pilothouse.sources.kubernetes.mesh_config import KubeMeshConfig
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.test_config_source import vs
from tests.kube.test_informer import VS, VS_NAME, Recorder, running, stop, until, virtual_service

SLOW_RETRY = Backoff(0.4, 0.4)
"""Slow enough that a test sees the state between a failed list and its retry."""


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[tuple[FakeApiServer, ApiClient]]:
    server = FakeApiServer(bookmark_interval=0.2)
    await server.start()
    client = await new_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
    try:
        yield server, client
    finally:
        await client.close()
        await server.stop()


def listed(name: str, version: str = "1", host: str = "a") -> dict[str, Any]:
    """A list item as the server sends it (with a resourceVersion, no apiVersion/kind)."""
    item = virtual_service(name, host=host)
    del item["apiVersion"], item["kind"]
    item["metadata"]["resourceVersion"] = version
    return item


def page(items: list[Any], version: str) -> bytes:
    return json.dumps(
        {
            "kind": "VirtualServiceList",
            "apiVersion": "networking.istio.io/v1",
            "metadata": {"resourceVersion": version},
            "items": items,
        }
    ).encode()


def event(kind: str, obj: Any) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


async def relist(server: FakeApiServer) -> None:
    """Make a watching informer list again: its version is compacted away (410 Gone),
    then its watch is cut (after a moment: a cut right after an event can be lost in the
    fake's ``wait_for``)."""
    name = f"bump-{server.revision}"
    server.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
        }
    )
    server.compact()
    await asyncio.sleep(0.1)
    server.drop_watches()


async def test_garbage_items_in_a_list_page_are_skipped_and_the_good_ones_delivered(
    api: tuple[FakeApiServer, ApiClient], caplog: pytest.LogCaptureFixture
) -> None:
    server, client = api
    bad_spec = listed("bad-spec")
    bad_spec["spec"] = [1, 2]
    items = [
        "garbage",
        listed("one"),
        {"metadata": "oops"},
        {"metadata": {"name": 5, "namespace": "default", "resourceVersion": "1"}},
        [1, 2, 3],
        listed("two"),
        bad_spec,
    ]
    server.script_list(VS_NAME, page(items, str(server.revision)))
    informer = Informer(client, VS, backoff=SLOW_RETRY)
    seen = Recorder()
    informer.subscribe(seen)
    with caplog.at_level(logging.WARNING, "pilothouse.sources.kubernetes"):
        task = await running(informer)
    assert seen.events == [("ADDED", "one", "a"), ("ADDED", "two", "a")]
    assert informer.problem is None and informer.skipped.count == 5
    logged = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert len(logged) == 5
    assert any("default/bad-spec" in m and "spec is an array" in m for m in logged), logged
    assert any("metadata is a string" in m for m in logged), logged
    assert all(VS_NAME in m for m in logged)
    # The watch from the list's version carries on.
    server.create(virtual_service("three"))
    await until(lambda: informer.get("default", "three") is not None)
    await stop(informer, task)


async def test_malformed_watch_lines_are_skipped_and_the_watch_goes_on(
    api: tuple[FakeApiServer, ApiClient],
) -> None:
    server, client = api
    informer = Informer(client, VS, backoff=SLOW_RETRY)
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    await until(lambda: server.open_watches(VS_NAME) == 1)
    good = listed("sneaky")
    lines = [
        event("MODIFIED", {"metadata": "oops"}),
        b"[1,2,3]",
        b"not json at all {",
        b'"a string"',
        event("SOMETHING", good),
        event("ADDED", None),
        b'{"type": "ADDED"}',
        event("ADDED", {**good, "spec": "nope"}),
        event("ADDED", {**good, "metadata": {**good["metadata"], "resourceVersion": 7}}),
        event("DELETED", {"metadata": {"name": ["x"]}}),
        event("BOOKMARK", {"metadata": {"resourceVersion": None}}),
        b"[" * 100_000 + b"]" * 100_000,
        b"\xff\xfe\x00garbage",
    ]
    for line in lines:
        assert server.send_raw(VS_NAME, line) == 1
    server.create(virtual_service("after"))
    await until(lambda: informer.get("default", "after") is not None)
    assert seen.events == [("ADDED", "after", "a")]
    assert informer.get("default", "sneaky") is None
    assert informer.skipped.count == len(lines)
    assert informer.watches == 1 and informer.lists == 1, "one watch, never broken"
    assert not task.done()
    await stop(informer, task)


async def test_a_malformed_change_keeps_the_last_good_version(
    api: tuple[FakeApiServer, ApiClient],
) -> None:
    server, client = api
    server.create(virtual_service("one"))
    informer = Informer(client, VS, backoff=SLOW_RETRY)
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    await until(lambda: server.open_watches(VS_NAME) == 1)
    broken = listed("one", version=str(server.revision))
    broken["spec"] = "not an object"
    server.send_raw(VS_NAME, event("MODIFIED", broken))
    await until(lambda: informer.skipped.count == 1)
    # A relist whose page holds it malformed keeps it too: no DELETED.
    await relist(server)  # then, before the informer's retry lists:
    server.script_list(VS_NAME, page([broken, listed("two")], str(server.revision)))
    await until(lambda: informer.get("default", "two") is not None)
    held = informer.get("default", "one")
    assert held is not None and held["spec"] == {"hosts": ["a"]}
    assert seen.events == [("ADDED", "one", "a"), ("ADDED", "two", "a")]
    await stop(informer, task)


NOT_LISTS = {
    "no items": b'{"kind": "List", "metadata": {"resourceVersion": "1"}}',
    "items is an object": b'{"kind": "VirtualServiceList", "metadata": '
    b'{"resourceVersion": "1"}, "items": {"a": 1}}',
    "no resourceVersion": b'{"kind": "VirtualServiceList", "metadata": {}, "items": []}',
    "metadata a string": b'{"kind": "VirtualServiceList", "metadata": "x", "items": []}',
    "not a list kind": b'{"kind": "Status", "metadata": {"resourceVersion": "1"}, "items": []}',
    "not JSON": b"<html>proxy error</html>",
    "an array": b"[]",
}


@pytest.mark.parametrize("answer", list(NOT_LISTS), ids=list(NOT_LISTS))
async def test_an_answer_that_is_not_a_list_withdraws_nothing_and_is_retried(
    api: tuple[FakeApiServer, ApiClient], answer: str
) -> None:
    server, client = api
    server.create(virtual_service("one"))
    server.create(virtual_service("two"))
    informer = Informer(client, VS, backoff=SLOW_RETRY)
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    server.script_list(VS_NAME, NOT_LISTS[answer], NOT_LISTS[answer])
    await relist(server)
    await until(lambda: informer.problem is not None)
    assert [o["metadata"]["name"] for o in informer.objects()] == ["one", "two"]
    assert [e[0] for e in seen.events] == ["ADDED", "ADDED"], "nothing withdrawn"
    assert not task.done()
    # Tried again with the backoff: the real list then succeeds and clears the problem.
    server.create(virtual_service("three"))
    await until(lambda: informer.problem is None and informer.get("default", "three") is not None)
    assert server.scripted_left(VS_NAME) == 0
    assert [e[0] for e in seen.events] == ["ADDED", "ADDED", "ADDED"]
    await stop(informer, task)


async def test_a_first_list_that_is_not_a_list_leaves_the_informer_unsynced(
    api: tuple[FakeApiServer, ApiClient],
) -> None:
    server, client = api
    server.create(virtual_service("one"))
    server.script_list(VS_NAME, NOT_LISTS["no items"])
    informer = Informer(client, VS, backoff=SLOW_RETRY)
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_attempted(), 10)
    assert not informer.has_synced(), "not read as an empty list"
    assert informer.problem is not None and "no items" in informer.problem
    await asyncio.wait_for(informer.wait_synced(), 10)
    assert informer.get("default", "one") is not None and informer.problem is None
    await stop(informer, task)


async def test_the_kube_source_reports_the_failing_kind_and_keeps_its_objects(
    api: tuple[FakeApiServer, ApiClient], tmp_path: Path
) -> None:
    server, _client = api
    server.create(vs("one"))
    kube = KubeSettings(str(server.kubeconfig(tmp_path / "kc")))
    source = build_source("k8s://", kube=kube)
    assert isinstance(source, KubeConfigSource)
    source._backoff = SLOW_RETRY
    task = asyncio.create_task(source.run())
    await until(source.has_synced)
    assert source.availability().available
    key = ConfigKey("VirtualService", "default", "one")
    assert source.store.get(key) is not None
    server.script_list(VS_NAME, NOT_LISTS["no items"], NOT_LISTS["no items"])
    await relist(server)
    await until(lambda: not source.availability().available)
    state = source.availability()
    assert VS_NAME in state.reason and "no items" in state.reason, state
    assert source.store.get(key) is not None, "its last good objects stay served"
    await until(lambda: source.availability().available, timeout=15)
    assert source.store.get(key) is not None
    source.close()
    await asyncio.wait_for(task, 10)


async def test_a_flood_of_malformed_events_logs_a_bounded_number_of_lines(
    api: tuple[FakeApiServer, ApiClient], caplog: pytest.LogCaptureFixture
) -> None:
    server, client = api
    informer = Informer(client, VS, backoff=SLOW_RETRY)
    task = await running(informer)
    await until(lambda: server.open_watches(VS_NAME) == 1)
    with caplog.at_level(logging.DEBUG, "pilothouse.sources.kubernetes"):
        for _ in range(2000):
            server.send_raw(VS_NAME, event("MODIFIED", {"metadata": "oops"}))
        for index in range(600):
            bad = listed(f"bad-{index}")
            bad["spec"] = index
            server.send_raw(VS_NAME, event("ADDED", bad))
        server.create(virtual_service("after"))
        await until(lambda: informer.get("default", "after") is not None)
    assert informer.skipped.count == 2600
    lines = [r for r in caplog.records if r.name == "pilothouse.sources.kubernetes"]
    assert len(lines) <= 260, len(lines)
    assert (
        sum("oops" in r.getMessage() or "metadata is a string" in r.getMessage() for r in lines)
        == 1
    )
    assert any("more malformed" in r.getMessage() for r in lines)
    await stop(informer, task)


def configmap_page(mesh: str, version: str) -> bytes:
    item = {
        "metadata": {"name": "istio", "namespace": "istio-system", "resourceVersion": version},
        "data": {"mesh": mesh},
    }
    body = {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": version},
        "items": [item],
    }
    return json.dumps(body).encode()


async def test_the_mesh_configmap_keeps_its_last_good_settings(
    api: tuple[FakeApiServer, ApiClient], tmp_path: Path
) -> None:
    server, _client = api
    server.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "istio", "namespace": "istio-system"},
            "data": {"mesh": "connectTimeout: 3s\n"},
        }
    )
    follower = KubeMeshConfig(str(server.kubeconfig(tmp_path / "kc")))
    await follower.first(10)
    assert follower.mesh.connect_timeout == 3.0
    reader = follower._informer  # the first read's, closed
    task = asyncio.create_task(follower.run())
    await until(lambda: follower._informer is not reader)
    informer = follower._informer
    assert informer is not None
    await until(lambda: informer.watches >= 1 and server.open_watches("configmaps") >= 1)
    # A malformed change, then a relist that is not a list: the settings stay.
    broken = {
        "metadata": {
            "name": "istio",
            "namespace": "istio-system",
            "resourceVersion": str(server.revision),
        },
        "data": ["x"],
    }
    server.send_raw("configmaps", event("MODIFIED", broken))
    await until(lambda: informer.skipped.count == 1)
    await relist(server)
    server.script_list("configmaps", NOT_LISTS["no items"], NOT_LISTS["no items"])
    await until(lambda: informer.problem is not None)
    assert follower.mesh.connect_timeout == 3.0
    # Then a good list with new settings applies them.
    server.unscript("configmaps")
    server.script_list("configmaps", configmap_page("connectTimeout: 4s\n", str(server.revision)))
    await until(lambda: follower.mesh.connect_timeout == 4.0, timeout=15)
    follower.close()
    await asyncio.wait_for(task, 10)


async def test_the_first_mesh_read_does_not_wait_for_an_unreachable_server(
    tmp_path: Path,
) -> None:
    async with FakeApiServer() as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kc"))
    # The server is stopped: its port refuses connections.
    follower = KubeMeshConfig(kubeconfig)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await follower.first(20) is None
    assert loop.time() - started < 5, "returned at the first refused connection"
    follower.close()
    await asyncio.wait_for(follower.run(), 10)
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert left == [], left


async def test_a_watch_line_too_long_to_read_is_skipped_unread(
    api: tuple[FakeApiServer, ApiClient],
) -> None:
    server, client = api
    informer = Informer(client, VS, backoff=SLOW_RETRY, max_line=4096)
    task = await running(informer)
    await until(lambda: server.open_watches(VS_NAME) == 1)
    huge = listed("huge")
    huge["metadata"]["annotations"] = {"blob": "x" * 200_000}
    server.send_raw(VS_NAME, event("ADDED", huge))
    server.send_raw(VS_NAME, event("ADDED", listed("small", str(server.revision))))
    await until(lambda: informer.get("default", "small") is not None)
    assert informer.get("default", "huge") is None
    assert informer.skipped.count == 1 and informer.watches == 1
    await stop(informer, task)
