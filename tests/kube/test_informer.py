"""The informer against the fake API server (a fake: no real API server can run here).

Real HTTP between ``kubernetes_asyncio`` and :class:`FakeApiServer`: list then watch,
410 Gone answered by a relist that delivers only the differences, a dropped watch
resumed without losing an event, bookmarks advancing the resume point, watch timeouts,
and 403/404 as an empty, synced informer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from pilothouse.backoff import Backoff
from pilothouse.sources.kubernetes.client import ResourceRef, new_api_client
from pilothouse.sources.kubernetes.events import KubeEvent
from pilothouse.sources.kubernetes.informer import Informer
from tests.kube.fake_apiserver import FakeApiServer

VS = ResourceRef("networking.istio.io", "v1", "virtualservices")
VS_NAME = "virtualservices.networking.istio.io"
FAST = Backoff(0.05, 0.2)


def virtual_service(
    name: str, namespace: str = "default", host: str = "a", **labels: str
) -> dict[str, Any]:
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"hosts": [host]},
    }


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[tuple[FakeApiServer, ApiClient]]:
    server = FakeApiServer(token="s3cret", bookmark_interval=0.2)
    await server.start()
    client = await new_api_client(str(server.kubeconfig(tmp_path / "kubeconfig")))
    try:
        yield server, client
    finally:
        await client.close()
        await server.stop()


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def __call__(self, event: KubeEvent) -> None:
        meta = event.obj["metadata"]
        self.events.append((event.type.value, meta["name"], event.obj["spec"]["hosts"][0]))


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def running(informer: Informer) -> asyncio.Task[None]:
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 10)
    return task


async def stop(informer: Informer, task: asyncio.Task[None]) -> None:
    informer.close()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_list_then_watch_delivers_every_change(api: tuple[FakeApiServer, ApiClient]) -> None:
    server, client = api
    server.create(virtual_service("one"))
    server.create(virtual_service("two", "other"))
    informer = Informer(client, VS, backoff=FAST)
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    assert seen.events == [("ADDED", "one", "a"), ("ADDED", "two", "a")]
    server.create(virtual_service("three"))
    server.apply(virtual_service("one", host="b"))
    server.delete(VS_NAME, "other", "two")
    await until(lambda: len(seen.events) == 5)
    assert seen.events[2:] == [
        ("ADDED", "three", "a"),
        ("MODIFIED", "one", "b"),
        ("DELETED", "two", "a"),
    ]
    assert sorted(o["metadata"]["name"] for o in informer.objects()) == ["one", "three"]
    assert informer.objects()[0]["apiVersion"] == "networking.istio.io/v1"
    await stop(informer, task)


async def test_410_gone_relists_and_delivers_only_the_differences(
    api: tuple[FakeApiServer, ApiClient],
) -> None:
    server, client = api
    for name in ("keep", "change", "drop"):
        server.create(virtual_service(name))
    informer = Informer(client, VS, backoff=Backoff(0.5, 0.5))
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    seen.events.clear()
    # While the watch is down, objects change and the history is compacted away.
    server.drop_watches()
    server.apply(virtual_service("change", host="b"))
    server.delete(VS_NAME, "default", "drop")
    server.create(virtual_service("new"))
    server.compact()
    await until(lambda: len(seen.events) == 3)
    await asyncio.sleep(0.3)  # and no replay of "keep" follows
    assert sorted(seen.events) == [
        ("ADDED", "new", "a"),
        ("DELETED", "drop", "a"),
        ("MODIFIED", "change", "b"),
    ]
    assert informer.lists == 2
    # The watch from the relist's version carries on.
    server.create(virtual_service("after"))
    await until(lambda: ("ADDED", "after", "a") in seen.events)
    await stop(informer, task)


async def test_a_dropped_watch_resumes_from_the_last_version_without_loss(
    api: tuple[FakeApiServer, ApiClient],
) -> None:
    server, client = api
    informer = Informer(client, VS, backoff=Backoff(0.3, 0.3))
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    for round_ in range(3):
        server.create(virtual_service(f"before-{round_}"))
        assert server.drop_watches() >= 0
        server.create(virtual_service(f"during-{round_}"))
        server.apply(virtual_service(f"before-{round_}", host="b"))
    await until(lambda: len(seen.events) == 9)
    assert [e for e in seen.events if e[1] == "during-2"] == [("ADDED", "during-2", "a")]
    assert ("MODIFIED", "before-1", "b") in seen.events
    assert informer.lists == 1, "resumed from its version, never relisted"
    await stop(informer, task)


async def test_bookmarks_move_the_resume_point(api: tuple[FakeApiServer, ApiClient]) -> None:
    server, client = api
    server.create(virtual_service("one"))
    informer = Informer(client, VS, backoff=Backoff(0.3, 0.3))
    task = await running(informer)
    listed = informer.resource_version
    # Other kinds move the revision on; only a bookmark tells this informer.
    for index in range(3):
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": f"c{index}", "namespace": "default"}})  # fmt: skip
    server.bookmark()
    await until(lambda: informer.resource_version == str(server.revision))
    assert informer.resource_version != listed
    server.compact()  # everything before the bookmark is gone: resuming there is fine
    server.drop_watches()
    server.create(virtual_service("two"))
    await until(lambda: informer.get("default", "two") is not None)
    assert informer.lists == 1
    await stop(informer, task)


async def test_watch_timeout_reopens_the_watch(api: tuple[FakeApiServer, ApiClient]) -> None:
    server, client = api
    informer = Informer(client, VS, backoff=FAST, watch_timeout=(1, 1))
    task = await running(informer)
    await until(lambda: informer.watches >= 3, timeout=15)
    server.create(virtual_service("late"))
    await until(lambda: informer.get("default", "late") is not None)
    assert informer.lists == 1
    timeouts = [r.query.get("timeoutSeconds") for r in server.requests if "watch" in r.query]
    assert set(timeouts) == {"1"}
    await stop(informer, task)


@pytest.mark.parametrize("refusal", ["uninstalled", "forbidden"])
async def test_a_resource_it_cannot_read_is_empty_and_synced(
    api: tuple[FakeApiServer, ApiClient], refusal: str, caplog: pytest.LogCaptureFixture
) -> None:
    server, client = api
    server.create(virtual_service("one"))
    if refusal == "uninstalled":
        server.uninstall(VS_NAME)
    else:
        server.forbid(VS_NAME)
    informer = Informer(client, VS, backoff=FAST, absent_retry=0.2)
    with caplog.at_level(logging.WARNING, "pilothouse.sources.kubernetes"):
        task = await running(informer)
        assert informer.objects() == []
        assert informer.absent == ("404 NotFound" if refusal == "uninstalled" else "403 Forbidden")
        await asyncio.sleep(0.5)  # looked again, warned once
    warnings = [r for r in caplog.records if VS_NAME in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    expected = "not installed" if refusal == "uninstalled" else "not allowed"
    assert expected in warnings[0].getMessage()
    if refusal == "uninstalled":
        server.install(VS_NAME)
        server.create(virtual_service("two"))
    else:
        server.allow(VS_NAME)
    await until(lambda: informer.absent is None and len(informer.objects()) >= 1)
    await stop(informer, task)


async def test_selectors_and_namespace_limit_what_it_holds(
    api: tuple[FakeApiServer, ApiClient],
) -> None:
    server, client = api
    server.create(virtual_service("in", "team", team="a"))
    server.create(virtual_service("other-team", "team", team="b"))
    server.create(virtual_service("elsewhere", "default", team="a"))
    informer = Informer(client, VS, namespace="team", label_selector="team=a", backoff=FAST)
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    assert [o["metadata"]["name"] for o in informer.objects()] == ["in"]
    # Relabelling moves an object out of the selector: a DELETED for this informer.
    server.apply(virtual_service("in", "team", team="b"))
    server.apply(virtual_service("other-team", "team", team="a"))
    await until(lambda: len(seen.events) == 3)
    assert [e[:2] for e in seen.events] == [
        ("ADDED", "in"),
        ("DELETED", "in"),
        ("ADDED", "other-team"),
    ]
    await stop(informer, task)


async def test_a_failing_handler_does_not_stop_the_informer(
    api: tuple[FakeApiServer, ApiClient],
) -> None:
    server, client = api
    informer = Informer(client, VS, backoff=FAST)

    def broken(_event: KubeEvent) -> None:
        raise RuntimeError("boom")

    informer.subscribe(broken)
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    server.create(virtual_service("one"))
    server.create(virtual_service("two"))
    await until(lambda: len(seen.events) == 2)
    await stop(informer, task)


async def test_a_long_list_is_read_page_by_page(
    api: tuple[FakeApiServer, ApiClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, client = api
    monkeypatch.setattr("pilothouse.sources.kubernetes.listing.PAGE_SIZE", 2)
    for index in range(5):
        server.create(virtual_service(f"vs-{index}"))
    informer = Informer(client, VS, backoff=FAST)
    seen = Recorder()
    informer.subscribe(seen)
    task = await running(informer)
    assert [e[1] for e in seen.events] == [f"vs-{index}" for index in range(5)]
    pages = [r for r in server.requests if "limit" in r.query]
    assert [r.query["limit"] for r in pages] == ["2", "2", "2"]
    assert [bool(r.query.get("continue")) for r in pages] == [False, True, True]
    await stop(informer, task)
