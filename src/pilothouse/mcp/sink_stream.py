"""Runs a :class:`SinkSession` over one stream, whichever side dialled.

The sink speaks first: one ``RequestResources`` per collection. Then every ``Resources``
is decided by the session, its change applied to the :class:`SinkStore`, and the reply
sent. The stream ends when the source closes its side or sending fails.

Faults stop at the message: if deciding or applying one raises, the traceback is logged
and the message is NACKed with INTERNAL (:meth:`SinkSession.failed`); the stream, the
session and the store go on with the next message.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from pilothouse.mcp.messages import ReceivedResources, SinkRequest
from pilothouse.mcp.sink_session import SinkDecision, SinkSession
from pilothouse.mcp.sink_store import SinkStore

log = logging.getLogger("pilothouse.mcp")

SendRequest = Callable[[SinkRequest], Awaitable[None]]


async def run_sink_stream(
    sink: SinkStore,
    session: SinkSession,
    incoming: AsyncIterator[ReceivedResources],
    send: SendRequest,
) -> None:
    """Subscribe to every collection, then answer each ``Resources`` until the stream ends."""
    for request in session.initial_requests():
        await send(request)
    async for message in incoming:
        await send(_decide(sink, session, message).reply)


def _decide(sink: SinkStore, session: SinkSession, message: ReceivedResources) -> SinkDecision:
    """Decide and apply one message; an exception NACKs it instead of ending the stream."""
    held = session.held
    try:
        decision = session.receive(message)
        sink.apply(session, decision)
    except Exception:
        log.exception("MCP sink: handling %s failed", message.collection)
        decision = session.failed(message, held)
        sink.apply(session, decision)
    return decision
