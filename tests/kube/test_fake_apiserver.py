"""The fake API server refuses what a real one refuses (it is a fake because no real API
server can run here; these tests keep it honest about the protocol the informers and
the registry rely on)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.kube.fake_apiserver import FakeApiServer

VS_PATH = "/apis/networking.istio.io/v1/namespaces/default/virtualservices"


def vs(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"hosts": ["a"]},
    }


@pytest.fixture
async def api() -> AsyncIterator[tuple[FakeApiServer, aiohttp.ClientSession]]:
    async with (
        FakeApiServer(token="t") as server,
        aiohttp.ClientSession(server.url, headers={"Authorization": "Bearer t"}) as session,
    ):
        yield server, session


async def get(session: aiohttp.ClientSession, path: str, **query: str) -> tuple[int, Any]:
    async with session.get(path, params=query) as response:
        return response.status, await response.json()


async def watch_lines(session: aiohttp.ClientSession, path: str, **query: str) -> list[Any]:
    async with session.get(path, params={"watch": "1", **query}) as response:
        assert response.status == 200
        return [json.loads(line) for line in (await response.read()).splitlines() if line]


async def test_refusals(api: tuple[FakeApiServer, aiohttp.ClientSession]) -> None:
    server, session = api
    server.create(vs("one"))
    async with aiohttp.ClientSession(server.url) as anonymous:
        assert (await get(anonymous, VS_PATH))[0] == 401
    cases = [
        ("/apis/networking.istio.io/v2/namespaces/default/virtualservices", {}, 404, "NotFound"),
        ("/api/v1/namespaces/default/nodes", {}, 404, "NotFound"),
        ("/apis/networking.istio.io/v1/virtualservices/one", {}, 404, "NotFound"),
        (VS_PATH, {"labelSelector": "a in b"}, 400, "BadRequest"),
        (VS_PATH, {"fieldSelector": "spec.hosts=a"}, 400, "BadRequest"),
        (VS_PATH, {"resourceVersion": "abc"}, 400, "BadRequest"),
        (VS_PATH, {"resourceVersionMatch": "Exact"}, 422, "Invalid"),
        (VS_PATH, {"watch": "1", "sendInitialEvents": "true"}, 422, "Invalid"),
        (VS_PATH, {"watch": "1", "limit": "5"}, 400, "BadRequest"),
        (VS_PATH, {"resourceVersion": str(server.revision + 100)}, 504, "Timeout"),
    ]
    for path, query, code, reason in cases:
        status, body = await get(session, path, **query)
        assert (status, body["kind"], body["reason"], body["code"]) == (
            code,
            "Status",
            reason,
            code,
        ), (path, query, body)
    server.uninstall("virtualservices.networking.istio.io")
    assert (await get(session, VS_PATH))[0] == 404
    server.install("virtualservices.networking.istio.io")
    server.forbid("virtualservices.networking.istio.io", "watch")
    assert (await get(session, VS_PATH))[0] == 200
    assert (await get(session, VS_PATH, watch="1"))[0] == 403


async def test_writes_follow_the_real_rules(
    api: tuple[FakeApiServer, aiohttp.ClientSession],
) -> None:
    _server, session = api
    older = {**vs("one"), "apiVersion": "networking.istio.io/v1alpha3"}
    async with session.post(VS_PATH, json=older) as response:
        assert response.status == 400, "the body's version must be the path's"
    async with session.post(VS_PATH, json=vs("one")) as response:
        assert response.status == 201
        created = await response.json()
    assert created["metadata"]["resourceVersion"] and created["metadata"]["generation"] == 1
    async with session.post(VS_PATH, json=vs("one")) as response:
        assert response.status == 409 and (await response.json())["reason"] == "AlreadyExists"
    stale = {**created, "metadata": {**created["metadata"], "resourceVersion": "1"}}
    async with session.put(f"{VS_PATH}/one", json=stale) as response:
        assert response.status == 409 and (await response.json())["reason"] == "Conflict"
    patch = {"status": {"validationMessages": [{"level": "ERROR"}]}}
    async with session.patch(f"{VS_PATH}/one/status", json=patch) as response:
        assert response.status == 415  # a merge patch must say so
    merge = {"Content-Type": "application/merge-patch+json"}
    async with session.patch(
        f"{VS_PATH}/one/status", data=json.dumps(patch), headers=merge
    ) as response:
        assert response.status == 200
        patched = await response.json()
    assert patched["status"] == patch["status"]
    assert patched["metadata"]["generation"] == 1, "status writes keep the generation"
    # The stored object answers in whichever version is asked for.
    status, body = await get(
        session, "/apis/networking.istio.io/v1beta1/namespaces/default/virtualservices/one"
    )
    assert status == 200 and body["apiVersion"] == "networking.istio.io/v1beta1"


async def test_list_pages_and_watch_history(
    api: tuple[FakeApiServer, aiohttp.ClientSession],
) -> None:
    server, session = api
    for index in range(5):
        server.create(vs(f"vs-{index}", team="a" if index % 2 else "b"))
    status, page = await get(session, VS_PATH, limit="2")
    assert status == 200 and len(page["items"]) == 2 and page["metadata"]["continue"]
    status, rest = await get(
        session, VS_PATH, limit="10", **{"continue": page["metadata"]["continue"]}
    )
    assert [i["metadata"]["name"] for i in rest["items"]] == ["vs-2", "vs-3", "vs-4"]
    status, selected = await get(session, VS_PATH, labelSelector="team in (a)")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["vs-1", "vs-3"]
    listed = page["metadata"]["resourceVersion"]
    server.delete("virtualservices.networking.istio.io", "default", "vs-0")
    events = await watch_lines(session, VS_PATH, resourceVersion=listed, timeoutSeconds="1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("DELETED", "vs-0")]
    # After compaction the old version is gone: a continue token is 410, a watch an ERROR.
    server.create(vs("later"))
    server.compact()
    status, body = await get(
        session, VS_PATH, limit="10", **{"continue": page["metadata"]["continue"]}
    )
    assert (status, body["reason"]) == (410, "Expired")
    (error,) = await watch_lines(session, VS_PATH, resourceVersion=listed)
    assert error["type"] == "ERROR" and error["object"]["code"] == 410
    assert error["object"]["reason"] == "Expired"
    # Watch-list: the current objects, then the bookmark that ends the initial events.
    watch_list = {
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
        "timeoutSeconds": "1",
    }
    events = await watch_lines(session, VS_PATH, **watch_list)
    assert [e["type"] for e in events][:6] == ["ADDED"] * 5 + ["BOOKMARK"]
    end = events[5]["object"]["metadata"]
    assert end["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_core_and_cluster_scoped_paths(
    api: tuple[FakeApiServer, aiohttp.ClientSession],
) -> None:
    server, session = api
    server.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team", "labels": {"env": "prod"}},
        }
    )
    server.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    pod_meta = {"name": "p", "namespace": "team"}
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
                   "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})  # fmt: skip
    server.create({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "s-1", "namespace": "team",
                                "labels": {"kubernetes.io/service-name": "s"}}})  # fmt: skip
    assert (await get(session, "/api/v1/namespaces/team"))[1]["metadata"]["labels"] == {
        "env": "prod"
    }
    assert len((await get(session, "/api/v1/nodes"))[1]["items"]) == 1
    status, pods = await get(
        session, "/api/v1/pods", fieldSelector="status.phase!=Failed,spec.nodeName=n1"
    )
    assert status == 200 and [p["metadata"]["name"] for p in pods["items"]] == ["p"]
    status, slices = await get(session, "/apis/discovery.k8s.io/v1/namespaces/team/endpointslices",
                               labelSelector="kubernetes.io/service-name=s")  # fmt: skip
    assert status == 200 and len(slices["items"]) == 1


async def test_status_is_written_only_through_its_subresource(
    api: tuple[FakeApiServer, aiohttp.ClientSession],
) -> None:
    server, session = api
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"},
           "spec": {"nodeName": "n1"}, "status": ready}  # fmt: skip
    async with session.post("/api/v1/namespaces/team/pods", json=pod) as response:
        assert response.status == 201 and "status" not in await response.json()
    server.update_status(pod)
    unready = {**pod, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    server.apply(unready)  # a plain update leaves the status alone
    stored = server.get("pods", "team", "p")
    assert stored is not None and stored["status"] == ready
    server.update_status(unready)
    stored = server.get("pods", "team", "p")
    assert stored is not None and stored["status"] == unready["status"]
