"""Each knob set in the environment reaches the component that uses it."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.admin.app import REST
from pilothouse.cli import serve as serve_module
from pilothouse.cli import serve_admin
from pilothouse.cli.main import build_parser
from pilothouse.protocol.type_urls import CDS, LDS
from pilothouse.push.cache import Resource
from pilothouse.push.proxy import parse_node
from pilothouse.push.request import PushRequest
from pilothouse.settings import DebounceSettings, XdsSettings
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.server.connection import Connection, Queued
from pilothouse.xds.server.discovery import DiscoveryServer
from tests.e2e.harness.control_plane import ControlPlane
from tests.integration.test_xds_server import open_stream, request
from tests.unit.xds_server.test_connection_push import FakeGeneration

ENVIRON = {
    "PILOTHOUSE_XDS_ADDRESS": "127.0.0.1:0",
    "PILOTHOUSE_XDS_TLS_ADDRESS": "127.0.0.1:0",
    "PILOTHOUSE_CA_DIR": os.environ["PILOTHOUSE_CA_DIR"],  # the suite's (tests/conftest.py)
    "PILOTHOUSE_ADMIN_ADDRESS": "127.0.0.1:0",
    "PILOTHOUSE_WEBHOOK_ADDRESS": "127.0.0.1:0",
    "PILOTHOUSE_WEBHOOK_CERT": "cert.pem",
    "PILOTHOUSE_WEBHOOK_KEY": "key.pem",
    "PILOTHOUSE_WEBHOOK_READ_TIMEOUT": "4",
    "PILOTHOUSE_WEBHOOK_HOST_NAMES": "istiod.istio-system.svc,webhook.example",
    "PILOTHOUSE_WASM_CACHE_BYTES": "123456",
    "PILOTHOUSE_XDS_CACHE_SIZE": "3",
    "PILOTHOUSE_XDS_SEND_TIMEOUT": "0.7",
    "PILOTHOUSE_XDS_WARMING_TIMEOUT": "0.3",
    "PILOTHOUSE_XDS_KEEPALIVE_TIME": "7",
    "PILOTHOUSE_XDS_KEEPALIVE_TIMEOUT": "3",
    "PILOTHOUSE_XDS_MIN_PING_INTERVAL": "2.5",
    "PILOTHOUSE_XDS_MAX_CONCURRENT_STREAMS": "50",
    "PILOTHOUSE_XDS_MAX_PENDING_STREAMS": "321",
    "PILOTHOUSE_XDS_MAX_CONNECTION_AGE": "90",
    "PILOTHOUSE_XDS_MAX_CONNECTION_AGE_GRACE": "2",
    "PILOTHOUSE_XDS_ADMISSION_RATE": "42.5",
    "PILOTHOUSE_XDS_ADMISSION_BURST": "3",
    "PILOTHOUSE_XDS_ADMISSION_WAIT": "0.25",
    "PILOTHOUSE_XDS_ADMISSION_MAX_CONNECTIONS": "77",
    "PILOTHOUSE_XDS_MAX_SEND_BYTES": "1000000",
    "PILOTHOUSE_MAX_RECEIVE_BYTES": "2000000",
    "PILOTHOUSE_DEBOUNCE_AFTER": "0.01",
    "PILOTHOUSE_REST_REFRESH_DELAY": "0.4",
    "PILOTHOUSE_REST_REQUEST_TIMEOUT": "0.6",
    "PILOTHOUSE_REST_MAX_BODY_BYTES": "12345",
    "PILOTHOUSE_REST_JSON_CACHE_ENTRIES": "11",
}


class FakeWebhook:
    """Stands in for the HTTPS webhook (no certificate needed) and records its knobs."""

    def __init__(
        self, cert: str, key: str, *, read_timeout: float, host_names: tuple[str, ...]
    ) -> None:
        self.cert, self.key, self.read_timeout = cert, key, read_timeout
        self.host_names = host_names

    async def start(self, host: str, port: int, *, reuse_port: bool = False) -> int:
        return 1

    async def stop(self) -> None:
        pass


def recorder(made: list[Any], make: Callable[..., Any]) -> Callable[..., Any]:
    def record(*args: Any, **kwargs: Any) -> Any:
        made.append(make(*args, **kwargs))
        return made[-1]

    return record


async def test_serve_hands_every_part_of_the_tree_to_its_component(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options: list[dict[str, Any]] = []
    real_server = grpc.aio.server

    def grpc_server(**kwargs: Any) -> Any:
        options.append(dict(kwargs["options"]))
        return real_server(**kwargs)

    discoveries: list[DiscoveryServer] = []
    apps: list[Any] = []
    monkeypatch.setattr(grpc.aio, "server", grpc_server)
    monkeypatch.setattr(serve_module, "DiscoveryServer", recorder(discoveries, DiscoveryServer))
    monkeypatch.setattr(serve_admin, "build_admin_app", recorder(apps, serve_admin.build_admin_app))
    webhooks: list[FakeWebhook] = []
    monkeypatch.setattr(serve_module, "WebhookServer", recorder(webhooks, FakeWebhook))
    args = build_parser().parse_args(["serve", "--config", str(tmp_path)])
    settings = serve_module.settings_from(args, ENVIRON)
    stop = asyncio.Event()
    bound: list[serve_module.Bound] = []
    task = asyncio.create_task(serve_module.serve(settings, stop, bound.append))
    try:
        while not bound:
            assert not task.done(), task.exception()
            await asyncio.sleep(0.01)
        (discovery,) = discoveries
        await asyncio.wait_for(discovery.wait_ready(), 10)

        # The plaintext port's server and the TLS port's backend: the same knobs.
        given, tls_backend = options
        assert tls_backend == given
        assert given["grpc.keepalive_time_ms"] == 7000
        assert given["grpc.keepalive_timeout_ms"] == 3000
        assert given["grpc.http2.ping_timeout_ms"] == 3000
        assert given["grpc.http2.min_ping_interval_without_data_ms"] == 2500
        assert given["grpc.max_concurrent_streams"] == 50
        assert given["grpc.server.max_pending_requests"] == 321
        assert given["grpc.max_send_message_length"] == 1_000_000
        assert given["grpc.max_receive_message_length"] == 2_000_000
        assert given["grpc.max_connection_age_ms"] == 90_000
        assert given["grpc.max_connection_age_grace_ms"] == 2000
        admission = discovery.admission
        assert (admission.rate, admission.burst, admission.wait) == (42.5, 3, 0.25)
        assert admission.max_connections == 77

        assert discovery.settings.send_timeout == 0.7
        assert discovery.settings.warming_timeout == 0.3
        assert discovery.settings.debounce == DebounceSettings(debounce_after=0.01)
        for number in range(5):
            discovery.cache.put(("k", number), Resource(str(number), "v", b""))
        assert len(discovery.cache) == 3

        (app,) = apps
        rest = app[REST]
        assert rest.polling.refresh_delay == timedelta(seconds=0.4)
        assert rest.polling.request_timeout == timedelta(seconds=0.6)
        assert rest.settings.json_cache_entries == 11
        url = f"http://127.0.0.1:{bound[0].admin_port}/v3/discovery:clusters"
        json = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(headers=json) as session:
            async with session.post(url, data=b"{" * 12_346) as too_big:
                assert too_big.status == 413
            async with session.post(url, data=b"{" * 12_000) as malformed:
                assert malformed.status == 400

        (webhook,) = webhooks
        assert (webhook.cert, webhook.key, webhook.read_timeout) == ("cert.pem", "key.pem", 4.0)
        assert webhook.host_names == ("istiod.istio-system.svc", "webhook.example")
        assert discovery.wasm_modules.budget == 123456
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


async def test_the_send_timeout_bounds_how_long_a_push_waits_for_a_stalled_stream() -> None:
    store = MemoryStore("test")
    discovery = DiscoveryServer(store, settings=XdsSettings(send_timeout=0.2))
    node = parse_node("sidecar~10.0.0.1~a.ns~ns.svc.cluster.local", {})
    stalled = Connection("c-1", "peer", node, FakeGeneration({}), delta=False)
    stalled.writer_attached = True
    stalled.outbound.put_nowait(Queued(b"never written", CDS, 0.0, 0.0))
    discovery.connect(stalled)
    workers = asyncio.create_task(discovery.pushes.workers.run())
    started = time.monotonic()
    discovery.pushes.queue.enqueue(stalled, PushRequest.everything())
    await asyncio.sleep(0)
    assert discovery.pushes.queue.is_in_flight(stalled)
    while discovery.pushes.queue.in_flight():  # the push workers give up on it, not the test
        assert time.monotonic() - started < 4.0
        await asyncio.sleep(0.01)
    assert 0.15 <= time.monotonic() - started < 2.0
    discovery.pushes.queue.shutdown()
    await asyncio.wait_for(workers, 2.0)


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
ADDED = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: data}
spec:
  hosts: [web.data.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 9080, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.10}]
"""


async def read(call: Any, timeout: float = 5.0) -> Any:
    return discovery_pb2.DiscoveryResponse.FromString(await asyncio.wait_for(call.read(), timeout))


async def ack(call: Any, response: Any) -> None:
    await call.write(
        request(
            response.type_url,
            None,
            version_info=response.version_info,
            response_nonce=response.nonce,
        )
    )


@pytest.mark.parametrize("warming_timeout", [0.3, 1.5])
async def test_the_warming_timeout_is_how_long_routes_wait_for_unwarmed_clusters(
    warming_timeout: float,
) -> None:
    """A proxy that never asks for endpoints never warms a new cluster: its listeners
    come once the connection's warming timeout has passed, not before."""
    plane = ControlPlane(
        settings=XdsSettings(
            debounce=DebounceSettings(debounce_after=0.01, debounce_max=0.1),
            warming_timeout=warming_timeout,
        )
    )
    plane.apply_yaml(MESH)
    await plane.start()
    channel, call = await open_stream(plane.port)
    try:
        await call.write(request(CDS))
        await ack(call, await read(call))
        await call.write(request(LDS, None))
        await ack(call, await read(call))

        # The warming starts when the server makes the CDS response: after `changed`, and
        # before `pushed`, when this client has read it (later on a loaded machine). So
        # the listeners come at least the timeout after `changed`, and not much more than
        # the timeout after `pushed`, however late the loop runs either.
        changed = time.monotonic()
        plane.apply_yaml(ADDED)
        clusters = await read(call, timeout=30)
        assert clusters.type_url == CDS
        pushed = time.monotonic()
        await ack(call, clusters)
        listeners = await read(call, timeout=warming_timeout + 30)
        arrived = time.monotonic()
        assert listeners.type_url == LDS
        assert arrived - changed >= warming_timeout - 0.005, arrived - changed
        assert arrived - pushed < warming_timeout + 1.0, arrived - pushed
    finally:
        await channel.close()
        await plane.stop()


async def test_a_connection_older_than_max_connection_age_is_closed() -> None:
    plane = ControlPlane(
        settings=XdsSettings(
            debounce=DebounceSettings(debounce_after=0.01),
            max_connection_age=0.5,
            max_connection_age_grace=0.5,
        )
    )
    plane.apply_yaml(MESH)
    await plane.start()
    channel, call = await open_stream(plane.port)
    try:
        await call.write(request(CDS))
        await read(call)
        opened = time.monotonic()
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            await asyncio.wait_for(call.read(), 10)
        assert ended.value.code() is grpc.StatusCode.UNAVAILABLE
        assert time.monotonic() - opened < 5
    finally:
        await channel.close()
        await plane.stop()
