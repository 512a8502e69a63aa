"""``serve`` on bracketed IPv6 addresses: every server (gRPC xDS, the asyncio TLS front,
the aiohttp admin port, ControlZ and the HTTPS webhook) binds ``[::1]:0`` or ``[::]:0``,
answers over IPv6 loopback, and reports where it listens in the same ``[host]:port``
form. Runs ``serve()`` in the test's event loop with real sockets; skipped only when
this machine has no IPv6 loopback (found out by binding ``::1``)."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from tests.e2e.harness.tls import ThrowawayCa
from tests.integration.ads_stream import sotw_request
from tests.integration.serve_in_process import serve_in_process, service_entry

CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
NODE = "sidecar~10.0.0.1~app-1.default~default.svc.cluster.local"


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


pytestmark = pytest.mark.skipif(not has_ipv6_loopback(), reason="no IPv6 loopback here")


async def first_cds_over_ipv6(port: int) -> Any:
    async with grpc.aio.insecure_channel(f"[::1]:{port}") as channel:
        call = channel.stream_stream(
            "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources",
            request_serializer=lambda b: b,
            response_deserializer=discovery_pb2.DiscoveryResponse.FromString,
        )()
        await call.write(sotw_request(CDS, NODE))
        response = await asyncio.wait_for(call.read(), 10)
        call.cancel()
        return response


async def tls_handshake(port: int) -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.wait_for(
        asyncio.open_connection("::1", port, ssl=context, server_hostname="localhost"), 10
    )
    writer.close()
    await writer.wait_closed()


@pytest.mark.parametrize("admin_host", ["::1", "::"])
async def test_every_server_binds_ipv6_and_reports_it_bracketed(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    admin_host: str,
) -> None:
    config = tmp_path / "mesh"
    config.mkdir()
    (config / "db.yaml").write_text(service_entry("db"))
    webhook = ThrowawayCa(tmp_path / "webhook-ca").issue("webhook", ("localhost",))
    overrides = {
        "xds.address": "[::1]:0",
        "xds.tls_address": "[::1]:0",
        "ca.dir": str(tmp_path / "ca"),
        "admin.address": f"[{admin_host}]:0",
        "ctrlz.address": "[::1]:0",
        "webhook.address": "[::1]:0",
        "webhook.cert": str(webhook.cert),
        "webhook.key": str(webhook.key),
    }
    with caplog.at_level(logging.INFO, "pilothouse"):
        async with serve_in_process(monkeypatch, config, overrides) as served:
            bound = served.bound
            async with aiohttp.ClientSession() as session:
                ready = await session.get(f"http://[::1]:{bound.admin_port}/ready")
                assert ready.status == 200, await ready.text()
                page = await session.get(f"http://[::1]:{bound.ctrlz_port}/")
                assert page.status == 200
            response = await first_cds_over_ipv6(bound.xds_port)
            assert response.type_url == CDS and response.resources
            await tls_handshake(bound.xds_tls_port)  # the asyncio TLS front
            await tls_handshake(bound.webhook_port)  # the aiohttp HTTPS webhook
    said = caplog.text
    assert f"xDS listening on [::1]:{bound.xds_port}" in said
    assert f"certificate service listening on [::1]:{bound.xds_tls_port}" in said
    assert f"listening on [{admin_host}]:{bound.admin_port}" in said
    assert f"ControlZ listening on [::1]:{bound.ctrlz_port}" in said
    webhook_lines = [r for r in caplog.records if "validation webhook" in r.getMessage()]
    assert [getattr(r, "address", None) for r in webhook_lines] == [f"[::1]:{bound.webhook_port}"]
