"""A live server for Hypothesis fuzz tests: it runs on its own event loop in a thread, so
that a plain (synchronous) ``@given`` test can send it real HTTP requests over loopback.

``LoopThread.call(coro)`` runs a coroutine on that loop and waits for it (bounded);
:class:`HttpPeer` is a keep-alive ``http.client`` connection that reconnects when the
server closes it (as it does after a 413).
"""

from __future__ import annotations

import asyncio
import http.client
import ssl
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread until :meth:`close`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self.loop.is_running()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class HttpPeer:
    """One keep-alive HTTP(S) connection to 127.0.0.1:``port``."""

    def __init__(self, port: int, context: ssl.SSLContext | None = None) -> None:
        self.port = port
        self.context = context
        self._connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self.context is not None:
            return http.client.HTTPSConnection(
                "127.0.0.1", self.port, timeout=20, context=self.context
            )
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)

    def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, str, bytes]:
        """(status, content type, body); a connection the server closed is reopened once."""
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = self._connect()
            try:
                self._connection.request(method, path, body=body, headers=headers or {})
                response = self._connection.getresponse()
                data = response.read()
            except (ConnectionError, http.client.HTTPException):
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.will_close:
                self.close()
            return response.status, response.getheader("Content-Type") or "", data
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
