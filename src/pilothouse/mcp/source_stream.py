"""Runs a :class:`SourceSession` over one stream, whichever side dialled.

One reader task feeds the sink's requests to the session; snapshot changes come from the
:class:`SnapshotCache`; this coroutine, the writer, sends the pushes that result, as bytes
assembled from cached encodings. The stream ends when the sink closes its side, when the
sink asks for a collection that is not served (:class:`UnsupportedCollection`, which the
server turns into ``InvalidArgument``; so is a :class:`BadRequest` from the requests'
iterator, e.g. bytes that do not decode), or when sending fails. An exception of ours while
deciding a request ends the stream with :class:`StreamFailed` (the server's ``Internal``),
its traceback logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pilothouse.mcp.messages import McpError, Push, SinkRequest, encode_push
from pilothouse.mcp.snapshot import CollectionSnapshot, SnapshotCache
from pilothouse.mcp.source_session import SourceKind, SourceSession, SourceStats

log = logging.getLogger("pilothouse.mcp")

Send = Callable[[bytes], Awaitable[None]]


class BadRequest(Exception):
    """The sink sent something this source cannot use; the message says what."""


class UnsupportedCollection(BadRequest):
    """The sink asked for a collection this source does not serve."""


class StreamFailed(Exception):
    """Serving the stream raised an exception of pilothouse's own (logged where it happened)."""


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """One live source stream, for debug output."""

    id: str
    peer: str
    sink_id: str
    stats: SourceStats
    errors: Mapping[str, McpError]
    """The last NACK per collection."""


class SourceStream:
    """One stream of a source: serves ``collections`` from ``cache``."""

    def __init__(
        self,
        stream_id: str,
        cache: SnapshotCache,
        collections: Iterable[str],
        *,
        incremental: Iterable[str] = (),
        peer: str = "",
    ) -> None:
        self.id = stream_id
        self.peer = peer
        self._cache = cache
        self.session = SourceSession(
            collections, incremental=incremental, snapshots=cache.snapshots()
        )
        self._outbound: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.problem: str | None = None
        self.failure: str | None = None

    def info(self) -> StreamInfo:
        errors = {
            collection: watch.last_error
            for collection, watch in self.session.watches().items()
            if watch.last_error is not None
        }
        return StreamInfo(
            self.id, self.peer, self.session.sink_id, self.session.stats, MappingProxyType(errors)
        )

    async def run(
        self, requests: AsyncIterator[SinkRequest], send: Send, *, opening: Iterable[bytes] = ()
    ) -> None:
        """Serve until the stream ends; raises :class:`UnsupportedCollection` if asked to."""
        unwatch = self._cache.watch(self._on_snapshot)
        reader = asyncio.create_task(self._read(requests))
        try:
            for first in opening:
                await send(first)
            while (body := await self._outbound.get()) is not None:
                await send(body)
        finally:
            unwatch()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        if self.problem is not None:
            raise UnsupportedCollection(self.problem)
        if self.failure is not None:
            raise StreamFailed(self.failure)

    def _on_snapshot(self, snapshot: CollectionSnapshot) -> None:
        self._queue(self.session.set_snapshot(snapshot))

    def _queue(self, push: Push | None) -> None:
        if push is not None:
            self._outbound.put_nowait(encode_push(push))

    async def _read(self, requests: AsyncIterator[SinkRequest]) -> None:
        try:
            async for request in requests:
                try:
                    decision = self.session.receive(request)
                except Exception:
                    log.exception("%s: deciding a request failed", self.id)
                    self.failure = f"deciding a request for {request.collection} failed"
                    return
                kind = decision.kind
                if kind is SourceKind.UNKNOWN:
                    self.problem = str(decision.error.message if decision.error else "")
                    log.warning("%s: %s", self.id, self.problem, extra={"peer": self.peer})
                    return
                if kind is SourceKind.NACK:
                    log.warning(
                        "%s: NACK of %s %s: %s",
                        self.id,
                        decision.collection,
                        self.session.watches()[decision.collection].nacked_version,
                        decision.error,
                        extra={"peer": self.peer, "sink": request.sink_id},
                    )
                elif kind is SourceKind.STALE:
                    log.debug(
                        "%s: stale %s for %s (nonce %s)",
                        self.id,
                        "NACK" if request.error else "ACK",
                        decision.collection,
                        request.response_nonce,
                    )
                self._queue(decision.push)
        except asyncio.CancelledError:
            raise
        except BadRequest as bad:
            self.problem = str(bad)
            log.warning("%s: %s", self.id, self.problem, extra={"peer": self.peer})
        except Exception as exc:  # the peer went away; the writer ends the stream
            log.info("%s: stream from %s ended: %s", self.id, self.peer, exc)
        finally:
            self._outbound.put_nowait(None)
