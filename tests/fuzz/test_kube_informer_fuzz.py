"""Informers fed mutated list pages and watch lines by a fake Kubernetes API server.

The API server is :class:`~tests.kube.fake_apiserver.FakeApiServer` (a fake: no real API
server can run here) on its own event loop (:class:`~tests.fuzz.live_server.LoopThread`),
answering lists with scripted bytes and writing raw lines into watches; the informer
under test talks to it over real HTTP through ``kubernetes_asyncio``. Hypothesis builds
pages and event streams mixing good objects with mutated ones (an item that is not an
object, metadata, name, namespace or resourceVersion of the wrong JSON type, spec or
labels of the wrong type), junk lines (other JSON values, unknown event types, events
without an object, bytes that are not JSON, deep nesting), and whole answers that are
not lists (no ``items``, ``items`` not an array, no resourceVersion, not a list kind,
not JSON). For every resource shape the informers read (a namespaced custom resource,
a core namespaced resource, a cluster-scoped one) it asserts:

- no exception leaves the informer (its task runs on, its watch is never broken by a
  line), and every event a handler gets is a well-formed object;
- the good objects of a page or stream are delivered, and what the informer holds is
  what a model of the rules says (a malformed change keeps the last good version);
- a list answer that is not a list keeps everything held (nothing withdrawn) and makes
  the informer report the problem, never an empty list.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes_asyncio.client import ApiClient

from pilothouse.backoff import Backoff
from pilothouse.sources.kubernetes.client import ResourceRef, new_api_client
from pilothouse.sources.kubernetes.events import KubeEvent
from pilothouse.sources.kubernetes.informer import Informer
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.live_server import LoopThread
from tests.kube.fake_apiserver import FakeApiServer

Obj = dict[str, Any]


@dataclass(frozen=True)
class Shape:
    """One resource the informers read, as the fuzz drives it."""

    ref: ResourceRef
    list_kind: str

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def namespaced(self) -> bool:
        return self.ref.namespaced


SHAPES = (
    Shape(ResourceRef("networking.istio.io", "v1", "virtualservices"), "VirtualServiceList"),
    Shape(ResourceRef("", "v1", "services"), "ServiceList"),
    Shape(ResourceRef("", "v1", "namespaces", namespaced=False), "NamespaceList"),
)
NAMES = ("a", "b", "c", "d")
HOSTS = ("h1", "h2", "h3")
NAMESPACE = "default"
NO_RETRY = Backoff(30.0, 30.0)
"""A failed list is not retried while an example looks at what it left."""


@dataclass
class Live:
    loop: LoopThread
    server: FakeApiServer
    client: ApiClient


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    loop = LoopThread()
    path = Path(tmp_path_factory.mktemp("kube")) / "kubeconfig"

    async def start() -> tuple[FakeApiServer, ApiClient]:
        server = FakeApiServer(bookmark_interval=30.0)
        await server.start()
        for index in range(3):  # resourceVersions up to 4 exist
            server.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"bump-{index}", "namespace": "x"},
                }
            )
        return server, await new_api_client(str(server.kubeconfig(path)))

    server, client = loop.call(start())
    try:
        yield Live(loop, server, client)
    finally:

        async def stop() -> None:
            await client.close()
            await server.stop()

        loop.call(stop())
        loop.close()


# -- what goes on the wire ------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
not_objects = json_values.filter(lambda v: not isinstance(v, dict))
not_strings = json_values.filter(lambda v: not isinstance(v, str))
not_objects_nor_null = not_objects.filter(lambda v: v is not None)

KEY_MUTATIONS = ("whole", "metadata", "name", "namespace")
"""Mutations after which the object's namespace/name cannot be read."""
OTHER_MUTATIONS = ("resourceVersion", "spec", "labels")


def good(shape: Shape, name: str, host: str, version: str = "2") -> Obj:
    meta: Obj = {"name": name, "resourceVersion": version, "labels": {"app": host}}
    if shape.namespaced:
        meta["namespace"] = NAMESPACE
    return {"metadata": meta, "spec": {"hosts": [host]}}


@st.composite
def mutated(draw: st.DrawFn, shape: Shape, name: str) -> tuple[str, Any]:
    """(mutation, an object broken by it)."""
    kind = draw(st.sampled_from(KEY_MUTATIONS + OTHER_MUTATIONS))
    obj = good(shape, name, "h1")
    meta = obj["metadata"]
    if kind == "whole":
        return kind, draw(not_objects)
    if kind == "metadata":
        obj["metadata"] = draw(not_objects)
    elif kind == "name":
        meta["name"] = draw(not_strings | st.just(""))
    elif kind == "namespace":
        if shape.namespaced:
            value = draw(not_strings | st.just("") | st.just(None))
            if value is None:
                del meta["namespace"]
            else:
                meta["namespace"] = value
        else:
            meta["namespace"] = draw(not_strings.filter(lambda v: v is not None))
    elif kind == "resourceVersion":
        value = draw(not_strings | st.just(""))
        if value is None:
            del meta["resourceVersion"]
        else:
            meta["resourceVersion"] = value
    elif kind == "spec":
        obj["spec"] = draw(not_objects_nor_null)
    else:
        labels = draw(not_objects_nor_null | st.builds(lambda v: {"app": v}, not_strings))
        meta["labels"] = labels
    return kind, obj


def encode(value: Any) -> bytes:
    return json.dumps(value).encode()


JUNK_LINES = st.one_of(
    not_objects.map(encode),
    st.binary(max_size=40).filter(lambda b: b"\n" not in b and b.strip() != b""),
    st.builds(
        lambda t, o: encode({"type": t, "object": o}),
        st.text(max_size=8).filter(
            lambda t: t not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR")
        ),
        json_values,
    ),
    st.builds(
        lambda t, o: encode({"type": t, "object": o}),
        st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]),
        not_objects,
    ),
    st.builds(lambda t: encode({"type": t}), st.sampled_from(["ADDED", "MODIFIED", "DELETED"])),
    st.integers(2_000, 60_000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.just(b'{"type": "ADDED", "object": {"metadata": {"name": "a"'),  # cut short
)


@dataclass(frozen=True)
class Line:
    data: bytes
    kind: str = ""
    """ADDED/MODIFIED/DELETED for an event of a named object, "" for junk."""
    name: str = ""
    host: str = ""
    mutation: str = ""
    """"" for a well-formed event."""


@st.composite
def lines(draw: st.DrawFn, shape: Shape) -> Line:
    choice = draw(st.sampled_from(("good", "good", "mutated", "junk")))
    if choice == "junk":
        return Line(draw(JUNK_LINES))
    kind = draw(st.sampled_from(("ADDED", "MODIFIED", "DELETED")))
    name, host = draw(st.sampled_from(NAMES)), draw(st.sampled_from(HOSTS))
    if choice == "good":
        return Line(encode({"type": kind, "object": good(shape, name, host)}), kind, name, host)
    mutation, obj = draw(mutated(shape, name))
    return Line(encode({"type": kind, "object": obj}), kind, name, "h1", mutation)


@st.composite
def items(draw: st.DrawFn, shape: Shape) -> tuple[Any, str, str, str]:
    """(item, name, host, mutation) of a list page; mutation "" for a good one."""
    name = draw(st.sampled_from(NAMES))
    if draw(st.booleans()):
        host = draw(st.sampled_from(HOSTS))
        return good(shape, name, host), name, host, ""
    mutation, obj = draw(mutated(shape, name))
    return obj, name, "", mutation


def page(shape: Shape, listed: list[Any], version: str = "3") -> Obj:
    return {
        "kind": shape.list_kind,
        "apiVersion": shape.ref.version if not shape.ref.group else f"{shape.ref.group}/v1",
        "metadata": {"resourceVersion": version},
        "items": listed,
    }


@st.composite
def not_lists(draw: st.DrawFn, shape: Shape, listed: list[Any]) -> bytes:
    """A list answer broken as a whole."""
    body = page(shape, listed)
    how = draw(
        st.sampled_from(("items", "items-type", "metadata", "version", "kind", "json", "value"))
    )
    if how == "items":
        del body["items"]
    elif how == "items-type":
        body["items"] = draw(
            not_objects.filter(lambda v: v is not None and not isinstance(v, list))
            | st.dictionaries(st.text(max_size=3), json_values, max_size=2)
        )
    elif how == "metadata":
        body["metadata"] = draw(not_objects)
    elif how == "version":
        value = draw(not_strings | st.just(""))
        if value is None:
            del body["metadata"]["resourceVersion"]
        else:
            body["metadata"]["resourceVersion"] = value
    elif how == "kind":
        body["kind"] = draw(
            not_strings | st.text(max_size=8).filter(lambda t: not t.endswith("List"))
        )
    elif how == "json":
        return encode(body)[: draw(st.integers(0, len(encode(body)) - 1))]
    else:
        return encode(draw(not_objects))
    return encode(body)


# -- the informer under test ------------------------------------------------------------------


class Checked:
    """A handler that records what it gets and every event that is not well-formed."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.malformed: list[Any] = []

    def __call__(self, event: KubeEvent) -> None:
        obj = event.obj
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            self.malformed.append(obj)
            return
        self.events.append((event.type.value, meta["name"]))


def held(informer: Informer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["spec"]["hosts"][0] for o in informer.objects()}


async def until(condition: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


async def start(live: Live, shape: Shape, first: bytes) -> tuple[Informer, Checked, Any]:
    live.server.unscript(shape.name)
    live.server.script_list(shape.name, first)
    informer = Informer(live.client, shape.ref, backoff=NO_RETRY)
    seen = Checked()
    informer.subscribe(seen)
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 10)
    return informer, seen, task


async def watching(live: Live, shape: Shape, informer: Informer) -> None:
    """Until the informer's watch is open: a bookmark sent into it has arrived (a count
    of open watches would include those of earlier examples the server has not noticed
    are gone)."""
    mark = str(live.server.revision)
    assert informer.resource_version != mark
    bookmark = encode({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": mark}}})
    async with asyncio.timeout(10):
        while informer.resource_version != mark:
            live.server.send_raw(shape.name, bookmark)
            await asyncio.sleep(0.01)


async def finish(informer: Informer, task: asyncio.Task[None]) -> None:
    informer.close()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def initial(shape: Shape, names: list[str]) -> tuple[bytes, dict[str, str]]:
    objects = {name: HOSTS[index % len(HOSTS)] for index, name in enumerate(names)}
    return encode(page(shape, [good(shape, n, h) for n, h in objects.items()])), objects


# -- the properties ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
@fuzz_settings(scale=0.35)
@given(data=st.data())
def test_a_relisted_page_delivers_its_good_items_and_keeps_the_rest(
    live: Live, shape: Shape, data: st.DataObject
) -> None:
    before = data.draw(st.lists(st.sampled_from(NAMES), unique=True), label="held")
    listed = data.draw(st.lists(items(shape), max_size=8), label="page")
    broken = data.draw(st.booleans(), label="whole answer broken")
    body = data.draw(not_lists(shape, [i[0] for i in listed])) if broken else None
    first, objects = initial(shape, before)

    async def scenario() -> None:
        informer, seen, task = await start(live, shape, first)
        try:
            await relisted(informer, seen, task)
        finally:
            await finish(informer, task)

    async def relisted(informer: Informer, seen: Checked, task: asyncio.Task[None]) -> None:
        assert held(informer) == objects
        await watching(live, shape, informer)
        second = body if body is not None else encode(page(shape, [i[0] for i in listed], "2"))
        live.server.script_list(shape.name, second)
        gone = encode(
            {
                "type": "ERROR",
                "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "old"},
            }
        )
        watches = informer.watches
        live.server.send_raw(shape.name, gone)
        if body is not None:
            await until(lambda: informer.problem is not None)
            assert held(informer) == objects, "a list that is not a list withdraws nothing"
            assert [e for e in seen.events if e[0] == "DELETED"] == []
            assert informer.has_synced()
        else:
            expected: dict[str, str] = {}
            for _item, name, host, mutation in listed:
                if not mutation:
                    expected[name] = host
            for _item, name, _host, mutation in listed:
                kept = mutation in OTHER_MUTATIONS and name in objects
                if kept and name not in expected:
                    expected[name] = objects[name]
            await until(lambda: informer.resource_version == "2" and informer.watches > watches)
            assert informer.problem is None
            assert held(informer) == expected
            deleted = sorted(n for kind, n in seen.events if kind == "DELETED")
            assert deleted == sorted(set(objects) - set(expected))
        assert seen.malformed == []
        assert not task.done()
        assert live.server.scripted_left(shape.name) == 0

    live.loop.call(scenario())


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
@fuzz_settings(scale=0.35)
@given(data=st.data())
def test_a_watch_stream_delivers_its_good_events_and_skips_the_rest(
    live: Live, shape: Shape, data: st.DataObject
) -> None:
    before = data.draw(st.lists(st.sampled_from(NAMES), unique=True), label="held")
    stream = data.draw(st.lists(lines(shape), max_size=12), label="stream")
    first, objects = initial(shape, before)
    expected = dict(objects)
    for line in stream:
        if not line.kind:
            continue
        if line.kind == "DELETED":
            if line.mutation in ("", *OTHER_MUTATIONS):
                expected.pop(line.name, None)
        elif not line.mutation:
            expected[line.name] = line.host
    expected["zz-end"] = "h1"

    async def scenario() -> None:
        informer, seen, task = await start(live, shape, first)
        try:
            await streamed(informer, seen, task)
        finally:
            await finish(informer, task)

    async def streamed(informer: Informer, seen: Checked, task: asyncio.Task[None]) -> None:
        await watching(live, shape, informer)
        watches = informer.watches
        for line in stream:
            live.server.send_raw(shape.name, line.data)
        live.server.send_raw(
            shape.name, encode({"type": "ADDED", "object": good(shape, "zz-end", "h1")})
        )
        await until(
            lambda: informer.get(NAMESPACE if shape.namespaced else "", "zz-end") is not None
        )
        assert held(informer) == expected
        assert informer.watches == watches and informer.lists == 1, "no line broke the watch"
        assert informer.problem is None
        assert seen.malformed == []
        junk = sum(1 for line in stream if not line.kind or line.mutation)
        skipped_deletes = sum(
            1 for line in stream if line.kind == "DELETED" and line.mutation in OTHER_MUTATIONS
        )
        assert informer.skipped.count == junk - skipped_deletes
        assert not task.done()

    live.loop.call(scenario())
