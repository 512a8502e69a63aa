"""The webhook's TLS settings: the certificate from files, TLS 1.2 at least."""

from __future__ import annotations

import ssl
from pathlib import Path

from pilothouse.webhook.server import webhook_tls_context
from tests.e2e.harness.tls import ThrowawayCa


def test_context_requires_tls_1_2_and_asks_for_no_client_certificate(tmp_path: Path) -> None:
    files = ThrowawayCa(tmp_path).issue("webhook")
    context = webhook_tls_context(files.cert, files.key)
    assert context.minimum_version is ssl.TLSVersion.TLSv1_2
    assert context.verify_mode is ssl.CERT_NONE
    assert context.protocol is ssl.PROTOCOL_TLS_SERVER
