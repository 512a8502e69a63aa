"""``/debug/acked``: what each proxy connected here acknowledged, as resource digests.

- ``GET /debug/acked`` lists the connected proxies:
  ``{"proxies": [{"proxyID", "nodeID", "connectionID", "delta", "envoyAdmin"}]}``,
  ``envoyAdmin`` being the ``host:port`` the proxy's ``ENVOY_ADMIN_ADDRESS`` metadata
  names (null when it names none; see :mod:`pilothouse.inspector.admin_address`).
- ``GET /debug/acked?proxyID=ID`` answers ``{type_url: {resource name: digest}}`` for
  the proxy whose node id, or ``pod.namespace`` (Istio's proxy ID), is ``ID``: every
  resource it ACKed and still subscribes to, per type it watches. 404 when no such
  proxy is connected to this pilothouse instance; 409 when a ``pod.namespace`` names
  several nodes (ask by node id). Several connections of one node (a reconnect that
  overlaps the old stream) answer for the newest.

The record holds references to the bytes sent (:mod:`pilothouse.xds.protocol.acked`);
digests (:mod:`pilothouse.inspector.digest`) are computed here, at request time,
yielding to the event loop between batches so that pushes go on meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Final

from aiohttp import web

from pilothouse.boundary.contain import json_error
from pilothouse.inspector.admin_address import envoy_admin_address
from pilothouse.inspector.config_dump import UNREADABLE
from pilothouse.inspector.digest import Unreadable, bytes_digest
from pilothouse.inspector.message_types import MessageTypes
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.discovery import DiscoveryServer

PATH: Final = "/debug/acked"
NOT_CONNECTED: Final = "not connected to this pilothouse instance"
BATCH: Final = 64
"""Resources digested between two yields to the event loop."""


def acked_routes(discovery: DiscoveryServer) -> list[web.RouteDef]:
    """The ``/debug/acked`` route for ``discovery``'s connections."""
    types = MessageTypes()

    async def acked(request: web.Request) -> web.Response:
        wanted = request.query.get("proxyID")
        connections = list(discovery.connections.values())
        if wanted is None:
            return web.json_response({"proxies": [_listed(c) for c in connections]})
        found = _find(connections, wanted)
        if isinstance(found, web.Response):
            return found
        return web.json_response(await _digests(found, types))

    return [web.get(PATH, acked)]


def _listed(connection: Connection) -> dict[str, Any]:
    proxy = connection.proxy
    return {
        "proxyID": proxy.id,
        "nodeID": proxy.node_id,
        "connectionID": connection.id,
        "delta": connection.delta,
        "envoyAdmin": envoy_admin_address(proxy.metadata),
    }


def _find(connections: Iterable[Connection], wanted: str) -> Connection | web.Response:
    candidates = [c for c in connections if c.proxy.node_id == wanted]
    if not candidates:
        candidates = [c for c in connections if c.proxy.id == wanted]
    if not candidates:
        return json_error(404, f"proxy {wanted!r}: {NOT_CONNECTED}")
    nodes = sorted({c.proxy.node_id for c in candidates})
    if len(nodes) > 1:
        return json_error(
            409, f"proxy {wanted!r} names {len(nodes)} nodes, ask by node id: {nodes}"
        )
    return max(candidates, key=lambda c: c.connected_at)


async def _digests(connection: Connection, types: MessageTypes) -> dict[str, dict[str, str]]:
    # A snapshot of the references first: the record changes as ACKs arrive meanwhile.
    held = {t: sorted(r.items()) for t, r in connection.engine.acked().items()}
    out: dict[str, dict[str, str]] = {}
    done = 0
    for type_url, resources in held.items():
        digests = out[type_url] = {}
        for name, resource in resources:
            try:
                digests[name] = bytes_digest(type_url, resource.body, types)
            except Unreadable as problem:
                digests[name] = UNREADABLE + str(problem)
            done += 1
            if done % BATCH == 0:
                await asyncio.sleep(0)
    return out
