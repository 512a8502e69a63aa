"""An HTTPS gateway end to end: Envoy terminates TLS with file credentials from a Gateway.

The Gateway server is ``protocol: HTTPS`` with ``tls: {mode: SIMPLE, serverCertificate,
privateKey}`` pointing at files a throwaway CA issued; the client trusts only that CA and
verifies the gateway's certificate against the name it asked for (SNI).  The server
lists either ``*`` (any SNI) or the certificate's name (that SNI only).
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.client import fetch, send_requests
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.tls import ThrowawayCa, client_ssl_context
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import (
    TRANSPORTS,
    fqdn,
    gateway,
    render,
    serve,
    service,
    start_gateway,
    to,
    virtual_service,
)

HOST = "shop.example.test"


@pytest.mark.parametrize("server_host", ["*", HOST])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_https_gateway_terminates_tls(
    tmp_path: Path,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
    transport: XdsTransport,
    server_host: str,
) -> None:
    namespace, port = "tls", free_port()
    ca = ThrowawayCa(tmp_path / "ca")
    certificate = ca.issue("shop", (HOST,))
    web = await upstream_factory("web")
    tls = {
        "mode": "SIMPLE",
        "serverCertificate": str(certificate.cert),
        "privateKey": str(certificate.key),
    }
    mesh = render(
        service("web", namespace, 8000, [(web, {})]),
        gateway(namespace, port, protocol="HTTPS", hosts=[server_host], tls=tls),
        virtual_service("web", namespace, [{"route": [to(fqdn("web", namespace))]}], hosts=[HOST]),
    )
    trusting = client_ssl_context(ca.cert_path)
    stranger = client_ssl_context(ThrowawayCa(tmp_path / "other-ca").cert_path)
    plane = await serve(mesh)
    try:
        await start_gateway(envoy_factory, plane, namespace, port, transport)
        report = await send_requests(
            LOOPBACK,
            port,
            20,
            authority=HOST,
            ssl_context=trusting,
            server_hostname=HOST,
            concurrency=2,
        )
        answer = await fetch(
            LOOPBACK, port, "/hello", authority=HOST, ssl_context=trusting, server_hostname=HOST
        )
        with pytest.raises(ssl.SSLCertVerificationError):
            await fetch(
                LOOPBACK, port, "/", authority=HOST, ssl_context=stranger, server_hostname=HOST
            )
        # another name: a server for "*" answers any SNI with its certificate, which the
        # client rejects; a server for HOST only has no filter chain for that SNI, so Envoy
        # closes the connection during the handshake
        refused = (
            ssl.SSLCertVerificationError
            if server_host == "*"
            else (ConnectionError, ssl.SSLEOFError)
        )
        with pytest.raises(refused):
            await fetch(
                LOOPBACK,
                port,
                "/",
                authority="other.example.test",
                ssl_context=trusting,
                server_hostname="other.example.test",
            )
    finally:
        await plane.stop()
    assert report.statuses == {200: 20}, report.summary()
    assert report.upstreams == {"web": 20}
    assert answer.status == 200
    assert answer.json()["path"] == "/hello"
    # the gateway speaks plain HTTP to the upstream and says so (x-forwarded-proto)
    assert answer.json()["headers"].get("x-forwarded-proto") == "https"
    assert web.requests == 21
