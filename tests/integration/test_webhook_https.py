"""The validation webhook over real HTTPS: a throwaway CA, 127.0.0.1:<free port>.

The client trusts only the throwaway CA and checks the name ``localhost``, the way the
Kubernetes API server checks the webhook's ``caBundle``.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pilothouse.webhook.review import MAX_BODY_BYTES
from pilothouse.webhook.server import WebhookServer
from tests.e2e.harness.tls import CertificateFiles, ThrowawayCa

HOST = "127.0.0.1"
JSON = {"Content-Type": "application/json"}

VIRTUAL_SERVICE = {
    "apiVersion": "networking.istio.io/v1beta1",
    "kind": "VirtualService",
    "metadata": {"name": "reviews", "namespace": "bookinfo"},
    "spec": {"hosts": ["reviews"], "http": [{"route": [{"destination": {"host": "reviews"}}]}]},
}
INVALID = {**VIRTUAL_SERVICE, "spec": {"hosts": ["reviews"], "http": [{"retries": {}}]}}


def admission_review(obj: Any, uid: str, api_version: str = "admission.k8s.io/v1") -> bytes:
    request = {"uid": uid, "operation": "CREATE", "namespace": "bookinfo", "object": obj}
    return json.dumps(
        {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}
    ).encode()


@pytest.fixture
def certificates(tmp_path: Path) -> CertificateFiles:
    return ThrowawayCa(tmp_path).issue("webhook", ("localhost",))


@pytest.fixture
async def server(certificates: CertificateFiles) -> AsyncIterator[WebhookServer]:
    # A short lingering time: after a 413 the server drains the unread body at most this long.
    webhook = WebhookServer(certificates.cert, certificates.key, lingering_time=0.3)
    await webhook.start(HOST, 0)
    try:
        yield webhook
    finally:
        await webhook.stop()


@pytest.fixture
def trusting(certificates: CertificateFiles) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificates.ca))


@pytest.fixture
async def client(trusting: ssl.SSLContext) -> AsyncIterator[aiohttp.ClientSession]:
    connector = aiohttp.TCPConnector(ssl=trusting)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


def url(server: WebhookServer, path: str) -> str:
    return f"https://{HOST}:{server.port}{path}"


async def post(
    client: aiohttp.ClientSession, server: WebhookServer, path: str, body: Any, **headers: str
) -> tuple[int, Any]:
    async with client.post(
        url(server, path),
        data=body,
        headers=headers or JSON,
        server_hostname="localhost",
    ) as response:
        text = await response.text()
        if response.content_type == "application/json":
            return response.status, json.loads(text)
        return response.status, text


async def test_start_binds_a_free_port(server: WebhookServer) -> None:
    assert server.port > 0
    with pytest.raises(RuntimeError):
        await server.start(HOST, 0)


@pytest.mark.parametrize("path", ["/validate", "/validate/", "/admitpilot"])
@pytest.mark.parametrize("api_version", ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"])
async def test_valid_object_is_allowed_over_verified_tls(
    server: WebhookServer, client: aiohttp.ClientSession, path: str, api_version: str
) -> None:
    status, answer = await post(
        client, server, path, admission_review(VIRTUAL_SERVICE, "a-1", api_version)
    )
    assert status == 200
    assert answer == {
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "response": {"uid": "a-1", "allowed": True},
    }


async def test_invalid_object_is_denied(
    server: WebhookServer, client: aiohttp.ClientSession
) -> None:
    status, answer = await post(client, server, "/validate", admission_review(INVALID, "d-9"))
    assert status == 200
    response = answer["response"]
    assert response["uid"] == "d-9"
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert response["status"]["message"].startswith("spec.http[0]")
    counts = server.stats.snapshot()
    assert dict(counts.failed) == {("VirtualService", "invalid_config"): 1}


async def test_http_errors_and_counters(
    server: WebhookServer, client: aiohttp.ClientSession
) -> None:
    assert (await post(client, server, "/validate", b""))[0] == 400
    assert (await post(client, server, "/validate", b"{garbage"))[0] == 400
    status, text = await post(
        client,
        server,
        "/validate",
        admission_review(VIRTUAL_SERVICE, "x"),
        **{"Content-Type": "text/plain"},
    )
    assert status == 415
    assert "application/json" in text
    status, _ = await post(
        client,
        server,
        "/validate",
        admission_review(VIRTUAL_SERVICE, "x"),
        **{"Content-Type": "application/json; charset=utf-8"},
    )
    assert status == 200
    counts = server.stats.snapshot()
    assert dict(counts.http_error) == {400: 2, 415: 1}
    assert dict(counts.passed) == {"VirtualService": 1}


async def test_ready(server: WebhookServer, client: aiohttp.ClientSession) -> None:
    async with client.get(url(server, "/ready"), server_hostname="localhost") as response:
        assert response.status == 200


async def test_oversized_body_is_413(server: WebhookServer, client: aiohttp.ClientSession) -> None:
    body = b" " * (MAX_BODY_BYTES + 1)
    status, _ = await post(client, server, "/validate", body)
    assert status == 413
    assert dict(server.stats.snapshot().http_error) == {413: 1}


async def test_oversized_chunked_body_is_413(
    server: WebhookServer, client: aiohttp.ClientSession
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(7):
            yield b" " * (1024 * 1024)

    status, _ = await post(client, server, "/validate", chunks())
    assert status == 413


async def test_large_body_within_the_limit_is_reviewed(
    server: WebhookServer, client: aiohttp.ClientSession
) -> None:
    annotations = {"note": "n" * (5 * 1024 * 1024)}
    obj = {**VIRTUAL_SERVICE, "metadata": {"name": "big", "annotations": annotations}}
    status, answer = await post(client, server, "/validate", admission_review(obj, "big"))
    assert status == 200
    assert answer["response"] == {"uid": "big", "allowed": True}


async def test_declared_oversize_is_refused_before_the_body_is_sent(
    server: WebhookServer, trusting: ssl.SSLContext
) -> None:
    reader, writer = await asyncio.open_connection(
        HOST, server.port, ssl=trusting, server_hostname="localhost"
    )
    try:
        writer.write(
            b"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: 104857600\r\n\r\n" + b"{" * 1024
        )
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), timeout=5)
        assert status_line.startswith(b"HTTP/1.1 413")
    finally:
        writer.close()


async def test_plain_http_to_the_https_port_fails(server: WebhookServer) -> None:
    async with aiohttp.ClientSession() as plain:
        with pytest.raises(aiohttp.ClientError):
            async with plain.post(
                f"http://{HOST}:{server.port}/validate",
                data=admission_review(VIRTUAL_SERVICE, "p"),
                headers=JSON,
            ) as response:
                await response.read()


async def test_a_client_that_does_not_trust_the_ca_fails(server: WebhookServer) -> None:
    strict = ssl.create_default_context()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=strict)) as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            async with session.get(url(server, "/ready"), server_hostname="localhost"):
                pass


async def test_the_certificate_name_is_checked(server: WebhookServer, client: Any) -> None:
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        async with client.get(url(server, "/ready"), server_hostname="webhook.example.com"):
            pass


async def test_stop_closes_the_port(certificates: CertificateFiles) -> None:
    webhook = WebhookServer(certificates.cert, certificates.key)
    port = await webhook.start(HOST, 0)
    await webhook.stop()
    with pytest.raises(OSError):
        await asyncio.open_connection(HOST, port)


async def raw_status(port: int, trusting: ssl.SSLContext, head: str) -> tuple[int, str]:
    """The status and body of a request written by hand (aiohttp always sends Host)."""
    reader, writer = await asyncio.open_connection(
        HOST, port, ssl=trusting, server_hostname="localhost"
    )
    try:
        writer.write(head.encode())
        await writer.drain()
        answer = (await asyncio.wait_for(reader.read(), 5)).decode()
    finally:
        writer.close()
    status_line, _, rest = answer.partition("\r\n")
    return int(status_line.split()[1]), rest.partition("\r\n\r\n")[2]


async def test_only_the_webhooks_own_names_are_answered(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    """Its certificate's names, localhost, loopback and the configured names are
    answered; another ``Host`` gets 421 and is not reviewed, no ``Host`` gets 400."""
    ca = ThrowawayCa(tmp_path / "named")
    named = ca.issue("webhook", ("istiod.istio-system.svc", "localhost", "*.wild.example"))
    webhook = WebhookServer(named.cert, named.key, host_names=["webhook.example"])
    await webhook.start(HOST, 0)
    verify = ssl.create_default_context(cafile=str(named.ca))
    review = admission_review(VIRTUAL_SERVICE, "h-1")
    try:
        for host in ("istiod.istio-system.svc", "localhost:15017", "127.0.0.1", "[::1]",
                     "webhook.example", "ISTIOD.istio-system.svc."):  # fmt: skip
            async with client.post(
                url(webhook, "/validate"), data=review, server_hostname="localhost",
                headers={**JSON, "Host": host}, ssl=verify,
            ) as response:  # fmt: skip
                assert response.status == 200, (host, await response.text())
        for host in ("evil.example", "istiod.istio-system.svc.evil.example", "a.wild.example",
                     "10.1.2.3"):  # fmt: skip
            async with client.post(
                url(webhook, "/validate"), data=review, server_hostname="localhost",
                headers={**JSON, "Host": host}, ssl=verify,
            ) as response:  # fmt: skip
                text = await response.text()
                assert response.status == 421, (host, text)
                assert f"Host '{host}' is not a name of this webhook" in text
                assert "PILOTHOUSE_WEBHOOK_HOST_NAMES" in text
        assert dict(webhook.stats.snapshot().passed) == {"VirtualService": 6}
        # HTTP/1.1 without Host is refused by aiohttp's parser; HTTP/1.0 and an empty
        # Host reach the check
        head = "POST /validate HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        assert (await raw_status(webhook.port, verify, head))[0] == 400
        old = head.replace("HTTP/1.1", "HTTP/1.0")
        assert await raw_status(webhook.port, verify, old) == (400, "a Host header is required\n")
        empty = head.replace("\r\n", "\r\nHost: \r\n", 1)
        assert await raw_status(webhook.port, verify, empty) == (400, "a Host header is required\n")
        assert dict(webhook.stats.snapshot().passed) == {"VirtualService": 6}
    finally:
        await webhook.stop()
