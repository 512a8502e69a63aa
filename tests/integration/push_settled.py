"""Waiting on an in-process control plane's pushes instead of sleeping past them.

A test that checks a change reached only the proxies it should must first know that
everything the change caused has landed. Sleeping "long enough" is slow when the machine
is quiet and wrong when it is busy; these wait on the server's own state instead:
:func:`released_since` until the debouncer has handed a change to the push service (which
plans it and queues every push it causes before the count moves), :func:`quiet` until no
push is queued and every response sent has been answered by its proxy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from typing import Protocol

from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.discovery import DiscoveryServer


class InProcessPlane(Protocol):
    """An in-process control plane: the harness's ``ControlPlane`` or a running
    ``serve_in_process``."""

    @property
    def discovery(self) -> DiscoveryServer | None: ...


async def quiet(
    plane: InProcessPlane, timeout: float = 20.0, nodes: Collection[str] | None = None
) -> None:
    """Wait until no push is queued and no connection is still ordering a change
    (make before break sends a second CDS once routes have moved); with ``nodes``, only
    the connections of those node IDs must have answered."""
    deadline = time.monotonic() + timeout
    discovery = plane.discovery
    assert discovery is not None
    while discovery.pending_pushes() or any(
        c.settling or not answered(c)
        for c in list(discovery.connections.values())
        if nodes is None or c.proxy.node_id in nodes
    ):
        assert time.monotonic() < deadline, "pushes never settled"
        await asyncio.sleep(0.05)


def answered(connection: Connection) -> bool:
    """Every response sent on the connection has been ACKed (the proxy processed it)."""
    if connection.sotw is not None:
        return all(w.nonce_acked == w.nonce_sent for w in connection.sotw.watches.values())
    assert connection.delta_session is not None
    return all(not w.in_flight for w in connection.delta_session.watches.values())


def released(plane: InProcessPlane) -> int:
    """How many push triggers the debouncer has released so far (each released request is
    planned and its pushes queued before the count moves on)."""
    assert plane.discovery is not None
    return sum(plane.discovery.stats.push_triggers.values())


async def released_since(
    plane: InProcessPlane, before: int, changes: int = 1, timeout: float = 20.0
) -> None:
    """Wait until the debouncer has released ``changes`` more triggers (one per config
    change, whether merged into one push or not) since ``released`` said ``before``."""
    deadline = time.monotonic() + timeout
    while released(plane) < before + changes:
        assert time.monotonic() < deadline, "the change was never released for a push"
        await asyncio.sleep(0.02)
