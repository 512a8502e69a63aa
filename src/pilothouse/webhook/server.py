"""``WebhookServer``: the validation webhook over HTTPS (istiod's port 15017).

Routes: ``POST /validate``, ``/validate/`` (istiod master) and ``/admitpilot`` (Galley
1.1–1.8), each answering with :meth:`AdmissionReviewer.review`, and ``GET /ready``.

TLS comes from a certificate and key file, loaded in :meth:`WebhookServer.start`
(construction does no I/O); TLS 1.2 is the minimum. Plain HTTP to the port fails the
handshake.

The body is read with a bound: a ``Content-Length`` over 6 MiB is answered 413 before a
byte of the body is read, and a chunked body is read only until it passes the bound.
The unread rest is never buffered; aiohttp drains (discards) it for at most
``lingering_time`` seconds so that the client sees the 413, then closes. A body that
does not arrive within ``read_timeout`` is answered 408. Large bodies are reviewed in a
worker thread so that a 6 MiB review does not stall the event loop it shares with xDS.

Every request is contained (:func:`~pilothouse.boundary.contain.containment`): an
exception that gets past the reviewer is logged and answered 500 with a generic
message; a wrong path or method gets 404 or 405 in plain text, an unreadable body 400.
A request whose ``Host`` is not one of the webhook's names is answered 421, one
without a ``Host`` 400 (:mod:`pilothouse.boundary.host_check`; the names,
:mod:`pilothouse.webhook.names`, are settled in :meth:`WebhookServer.start`, with the
certificate).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Iterable
from pathlib import Path

from aiohttp import hdrs, web

from pilothouse.boundary.contain import containment, text_error
from pilothouse.boundary.host_check import host_check
from pilothouse.settings import WebhookSettings
from pilothouse.webhook.names import ADVICE, webhook_names
from pilothouse.webhook.review import AdmissionReviewer, ReviewResult, http_error, too_large
from pilothouse.webhook.stats import ValidationStats

REVIEW_PATHS = ("/validate", "/validate/", "/admitpilot")
_READ_CHUNK = 64 * 1024
_INLINE_REVIEW_BYTES = 256 * 1024

_log = logging.getLogger("pilothouse.webhook")


def webhook_tls_context(cert_file: Path | str, key_file: Path | str) -> ssl.SSLContext:
    """A server context presenting ``cert_file``; TLS 1.2 or newer, no client certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file))
    return context


class WebhookServer:
    """The webhook application on one HTTPS address."""

    def __init__(
        self,
        cert_file: Path | str,
        key_file: Path | str,
        *,
        reviewer: AdmissionReviewer | None = None,
        stats: ValidationStats | None = None,
        read_timeout: float = WebhookSettings.read_timeout,
        lingering_time: float = 2.0,
        shutdown_timeout: float = 2.0,
        host_names: Iterable[str] = WebhookSettings.host_names,
    ) -> None:
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.reviewer = reviewer if reviewer is not None else AdmissionReviewer()
        self.stats = stats if stats is not None else ValidationStats()
        self._read_timeout = read_timeout
        self._lingering_time = lingering_time
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._host_names = tuple(host_names)
        self.names = webhook_names("", None, self._host_names)
        """The names a request's ``Host`` may carry (the certificate's added at start)."""

    def build_app(self) -> web.Application:
        app = web.Application(
            client_max_size=self.reviewer.max_body_bytes,
            middlewares=[
                containment(text_error, _log),
                host_check(lambda: self.names, text_error, server="webhook", advice=ADVICE),
            ],
        )
        for path in REVIEW_PATHS:
            app.router.add_post(path, self._review)
        app.router.add_get("/ready", _ready)
        return app

    async def start(self, host: str, port: int, *, reuse_port: bool = False) -> int:
        """Load the certificate, bind and serve; returns the bound port (port 0 works);
        ``reuse_port`` shares the port with other workers (``SO_REUSEPORT``)."""
        if self._runner is not None:
            raise RuntimeError("the webhook server is already started")
        context = webhook_tls_context(self.cert_file, self.key_file)
        self.names = webhook_names(host, self.cert_file, self._host_names)
        runner = web.AppRunner(
            self.build_app(),
            access_log=None,
            shutdown_timeout=self._shutdown_timeout,
            lingering_time=self._lingering_time,
        )
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=context, reuse_port=reuse_port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        return self.port

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _review(self, request: web.Request) -> web.Response:
        result = await self._answer(request)
        self.stats.record(result)
        response = web.Response(
            status=result.status, body=result.body_bytes(), content_type=result.content_type
        )
        if result.status in (408, 413):
            response.force_close()
        return response

    async def _answer(self, request: web.Request) -> ReviewResult:
        limit = self.reviewer.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            return too_large(limit)
        try:
            async with asyncio.timeout(self._read_timeout):
                body = await _read_bounded(request, limit)
        except TimeoutError:
            return http_error(408, "request body not received in time")
        if body is None:
            return too_large(limit)
        content_type = request.headers.get(hdrs.CONTENT_TYPE)
        if len(body) <= _INLINE_REVIEW_BYTES:
            return self.reviewer.review(body, content_type)
        return await asyncio.to_thread(self.reviewer.review, body, content_type)


async def _read_bounded(request: web.Request, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(_READ_CHUNK):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _ready(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")
