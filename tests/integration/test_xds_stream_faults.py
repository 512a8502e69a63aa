"""Faults stop at the ADS stream: bad input and pilothouse's own exceptions end one stream
with the status that fits, and the server goes on serving every other stream.

A real grpc.aio server and real grpc.aio clients; the faults of our own are made by
wrapping the real CDS generator so that it raises for one proxy (there is no real way
to make a correct generator fail on purpose).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import grpc
import pytest

from pilothouse.protocol.type_urls import CDS
from pilothouse.push.cache import Resource
from pilothouse.xds.generators.base import GenerationInput, Generator
from pilothouse.xds.server.connection import INTERNAL_ERROR
from tests.e2e.harness.control_plane import ControlPlane
from tests.integration.ads_stream import (
    cluster_names,
    converge,
    delta_request,
    open_ads,
    sotw_request,
)

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: data}
spec:
  hosts: [db.data.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.0.9}]
"""
CACHE = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: cache, namespace: data}
spec:
  hosts: [cache.data.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 6379, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.0.0.10}]
"""
DB = "outbound|5432||db.data.svc.cluster.local"
CACHE_CLUSTER = "outbound|6379||cache.data.svc.cluster.local"
GOOD = "sidecar~10.0.0.1~app-1.data~data.svc.cluster.local"
DOOMED = "sidecar~10.0.0.2~app-2.data~data.svc.cluster.local"
SECRET = "secret-internals-0xdeadbeef"


@dataclass
class FailingFor:
    """The real generator, except that it raises for the proxy ``victim`` once ``armed``."""

    inner: Generator
    victim: str
    armed: bool = True
    raised: int = 0
    type_url: str = ""

    def __post_init__(self) -> None:
        self.type_url = self.inner.type_url

    def generate(self, given: GenerationInput) -> Mapping[str, Resource]:
        if self.armed and given.proxy.node_id == self.victim:
            self.raised += 1
            raise RuntimeError(SECRET)
        return self.inner.generate(given)


@pytest.fixture
async def plane() -> AsyncIterator[ControlPlane]:
    control_plane = ControlPlane()
    control_plane.apply_yaml(MESH)
    await control_plane.start()
    try:
        yield control_plane
    finally:
        await control_plane.stop()


def break_cds(plane: ControlPlane, victim: str, *, armed: bool = True) -> FailingFor:
    assert plane.discovery is not None
    inner = plane.discovery.generator(CDS)
    assert inner is not None
    failing = FailingFor(inner, victim, armed)
    plane.discovery.register_generator(failing)
    return failing


def assert_server_running(plane: ControlPlane) -> None:
    task = plane._task
    assert task is not None and not task.done(), "DiscoveryServer.run() ended"


def assert_no_internals(details: str) -> None:
    for leak in (SECRET, "RuntimeError", "Traceback", "Exception", ".py"):
        assert leak not in details


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
async def test_undecodable_first_request_is_invalid_argument(
    plane: ControlPlane, delta: bool
) -> None:
    stream = await open_ads(plane.port, delta=delta)
    try:
        await stream.send(b"\xff\xff\xff\xff")
        code, details = await stream.status()
    finally:
        await stream.close()
    kind = "DeltaDiscoveryRequest" if delta else "DiscoveryRequest"
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert f"not a valid envoy.service.discovery.v3.{kind}" in details
    assert "corrupt" in details
    await converge(plane.port, GOOD, DB, delta=delta)


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
async def test_undecodable_later_request_is_invalid_argument(
    plane: ControlPlane, delta: bool
) -> None:
    stream = await open_ads(plane.port, delta=delta)
    try:
        await stream.send(delta_request(CDS, GOOD) if delta else sotw_request(CDS, GOOD))
        assert DB in cluster_names(await stream.read())
        await stream.send(b"\x0a\xff\x01garbage")  # a length running past the end
        code, details = await stream.status()
    finally:
        await stream.close()
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "not a valid" in details
    for _ in range(100):
        if not plane.connections():
            break
        await asyncio.sleep(0.02)
    assert plane.connections() == []


async def test_undecodable_request_on_a_per_type_service(plane: ControlPlane) -> None:
    stream = await open_ads(plane.port, service="envoy.service.cluster.v3.ClusterDiscoveryService")
    try:
        await stream.send(b"\xff")
        code, details = await stream.status()
    finally:
        await stream.close()
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "not a valid" in details


@pytest.mark.parametrize(
    ("node_id", "text"),
    [
        ("sidecar~~~", "the ip (2nd part) is empty"),
        ("sidecar~~pod.ns~ns.svc.cluster.local", "the ip (2nd part) is empty"),
        ("sidecar~10.0.0.1~~ns.svc.cluster.local", "the id (3rd part, pod.namespace) is empty"),
        ("~10.0.0.1~pod.ns~ns.svc.cluster.local", "the type (1st part) is empty"),
    ],
)
@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
async def test_empty_node_parts_are_invalid_argument(
    plane: ControlPlane, node_id: str, text: str, delta: bool
) -> None:
    stream = await open_ads(plane.port, delta=delta)
    try:
        await stream.send(delta_request(CDS, node_id) if delta else sotw_request(CDS, node_id))
        code, details = await stream.status()
    finally:
        await stream.close()
    assert code is grpc.StatusCode.INVALID_ARGUMENT and text in details


async def test_node_metadata_json_cannot_express_is_invalid_argument(plane: ControlPlane) -> None:
    from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

    message = discovery_pb2.DiscoveryRequest(type_url=CDS)
    message.node.id = GOOD
    message.node.metadata.fields["X"].number_value = float("nan")
    stream = await open_ads(plane.port)
    try:
        await stream.send(message.SerializeToString())
        code, details = await stream.status()
    finally:
        await stream.close()
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "metadata cannot be read" in details


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
async def test_generator_raising_on_a_request_ends_only_that_stream(
    plane: ControlPlane, delta: bool
) -> None:
    """The doomed proxy's own request makes the generator raise: its stream ends with
    INTERNAL and no Python internals; a stream opened before keeps getting pushes, a new
    one converges, and the server's run() goes on."""
    watcher = await open_ads(plane.port, delta=delta)
    doomed = await open_ads(plane.port, delta=delta)
    request = delta_request if delta else sotw_request
    try:
        await watcher.send(request(CDS, GOOD))
        first = await watcher.read()
        assert DB in cluster_names(first)
        if not delta:
            await watcher.send(
                sotw_request(CDS, version_info=first.version_info, response_nonce=first.nonce)
            )
        else:
            await watcher.send(delta_request(CDS, response_nonce=first.nonce))
        failing = break_cds(plane, DOOMED)
        await doomed.send(request(CDS, DOOMED))
        code, details = await doomed.status()
        assert code is grpc.StatusCode.INTERNAL and details == INTERNAL_ERROR
        assert_no_internals(details)
        assert failing.raised == 1
        plane.apply_yaml(CACHE)
        pushed = await watcher.read()
        assert CACHE_CLUSTER in cluster_names(pushed)
        assert DB in await converge(
            plane.port, GOOD.replace("10.0.0.1", "10.0.0.3"), DB, delta=delta
        )
        assert_server_running(plane)
    finally:
        await watcher.close()
        await doomed.close()


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
async def test_generator_raising_in_a_push_ends_only_that_stream(
    plane: ControlPlane, delta: bool
) -> None:
    """Both proxies connect cleanly; then a config change makes the generator raise while
    the push workers generate the doomed proxy's push. The other proxy gets the push, the
    doomed stream ends with INTERNAL, the push service keeps running (a second change is
    pushed too) and the failure is counted."""
    request = delta_request if delta else sotw_request
    streams = [await open_ads(plane.port, delta=delta) for _ in range(2)]
    watcher, doomed = streams
    try:
        for stream, node in ((watcher, GOOD), (doomed, DOOMED)):
            await stream.send(request(CDS, node))
            assert DB in cluster_names(await stream.read())
        failing = break_cds(plane, DOOMED)
        plane.apply_yaml(CACHE)
        assert CACHE_CLUSTER in cluster_names(await watcher.read())
        code, details = await doomed.status()
        assert code is grpc.StatusCode.INTERNAL and details == INTERNAL_ERROR
        assert failing.raised >= 1
        assert plane.discovery is not None and plane.discovery.stats.push_failures >= 1
        plane.delete("ServiceEntry", "data", "cache")
        assert CACHE_CLUSTER not in cluster_names(await watcher.read())
        assert_server_running(plane)
        failing.armed = False  # the doomed proxy reconnects and is served again
        assert DB in await converge(plane.port, DOOMED, DB, delta=delta)
    finally:
        for stream in streams:
            await stream.close()


async def test_exception_while_reading_the_node_is_internal(
    plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception of our own before the connection exists (here in node parsing) ends
    the stream with INTERNAL, not grpc's UNKNOWN with the exception text."""
    import pilothouse.xds.server.ads as ads

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError(SECRET)

    monkeypatch.setattr(ads, "parse_node", broken)
    stream = await open_ads(plane.port)
    try:
        await stream.send(sotw_request(CDS, GOOD))
        code, details = await stream.status()
    finally:
        await stream.close()
    assert code is grpc.StatusCode.INTERNAL and details == INTERNAL_ERROR
    monkeypatch.undo()
    await converge(plane.port, GOOD, DB)
    assert_server_running(plane)


HIDDEN = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: hidden, namespace: other}
spec:
  hosts: [hidden.other.svc.cluster.local]
  exportTo: ["."]
  resolution: STATIC
  ports: [{number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.11}]
"""


async def test_a_push_that_fails_to_build_is_carried_into_the_next(
    plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building the PushContext raises once (patched, standing in for a bug): the push
    loop survives, and the change that push carried is pushed with the next one, even
    when the next change alone would not concern the proxy (it cannot see ``other``)."""
    import pilothouse.push.pipeline as pipeline_module

    real = pipeline_module.build_context
    failures = [RuntimeError(SECRET)]

    def build_failing_once(*args: object, **kwargs: object) -> object:
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    watcher = await open_ads(plane.port)
    try:
        await watcher.send(sotw_request(CDS, GOOD))
        first = await watcher.read()
        await watcher.send(
            sotw_request(CDS, version_info=first.version_info, response_nonce=first.nonce)
        )
        monkeypatch.setattr(pipeline_module, "build_context", build_failing_once)
        plane.apply_yaml(CACHE)
        for _ in range(100):
            if not failures:
                break
            await asyncio.sleep(0.02)
        assert not failures, "the push was never attempted"
        plane.apply_yaml(HIDDEN)
        pushed = await watcher.read()
        names = cluster_names(pushed)
        assert CACHE_CLUSTER in names and "outbound|80||hidden.other.svc.cluster.local" not in names
        assert_server_running(plane)
    finally:
        await watcher.close()


@pytest.mark.parametrize("delta", [False, True], ids=["sotw", "delta"])
async def test_oversized_request_stays_resource_exhausted(plane: ControlPlane, delta: bool) -> None:
    names = ["x" * 1024] * 5000  # about 5 MiB, over the 4 MiB limit
    if delta:
        body = delta_request(CDS, GOOD, resource_names_subscribe=names)
    else:
        body = sotw_request(CDS, GOOD, resource_names=names)
    stream = await open_ads(plane.port, delta=delta)
    try:
        await stream.send(body)
        code, details = await stream.status()
    finally:
        await stream.close()
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert_no_internals(details)
    await converge(plane.port, GOOD, DB, delta=delta)
