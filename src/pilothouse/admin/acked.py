"""``/debug/acked``: what each proxy connected here acknowledged, as resource digests.

- ``GET /debug/acked`` lists the connected proxies:
  ``{"proxies": [{"proxyID", "nodeID", "connectionID", "delta", "envoyAdmin"}]}``,
  ``envoyAdmin`` being the ``host:port`` the proxy's ``ENVOY_ADMIN_ADDRESS`` metadata
  names (null when it names none; see :mod:`pilothouse.inspector.admin_address`).
- ``GET /debug/acked?proxyID=ID`` answers ``{type_url: {resource name: digest}}`` for
  the proxy whose node id, or ``pod.namespace`` (Istio's proxy ID), is ``ID``: every
  resource it ACKed and still subscribes to, per type it watches. 404 when no such
  proxy is connected to this pilothouse instance; 409 when a ``pod.namespace`` names
  several nodes (ask by node id). A node may have several streams: one per type when
  its bootstrap uses the per-type services instead of ADS, or an old stream that
  overlaps its reconnect. Each type is then answered from the newest stream watching it.

The record holds references to the bytes sent (:mod:`pilothouse.xds.protocol.acked`);
digests (:mod:`pilothouse.inspector.digest`) are computed here, at request time,
yielding to the event loop between batches so that pushes go on meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Final

from aiohttp import web

from pilothouse.boundary.contain import json_error
from pilothouse.inspector.admin_address import envoy_admin_address
from pilothouse.inspector.config_dump import UNREADABLE
from pilothouse.inspector.digest import Unreadable, bytes_digest
from pilothouse.inspector.message_types import MessageTypes
from pilothouse.push.cache import Resource
from pilothouse.xds.server.debug_view import DebugConnection, DebugView

PATH: Final = "/debug/acked"
NOT_CONNECTED: Final = "not connected to this pilothouse instance"
BATCH: Final = 64
"""Resources digested between two yields to the event loop."""


def acked_routes(discovery: DebugView) -> list[web.RouteDef]:
    """The ``/debug/acked`` route for ``discovery``'s connections."""
    types = MessageTypes()

    async def acked(request: web.Request) -> web.Response:
        wanted = request.query.get("proxyID")
        connections = discovery.connections()
        if wanted is None:
            return web.json_response({"proxies": [_listed(c) for c in connections]})
        found = _find(connections, wanted)
        if isinstance(found, web.Response):
            return found
        return web.json_response(await _digests(_acked(found), types))

    return [web.get(PATH, acked)]


def _listed(connection: DebugConnection) -> dict[str, Any]:
    proxy = connection.proxy
    return {
        "proxyID": proxy.id,
        "nodeID": proxy.node_id,
        "connectionID": connection.id,
        "delta": connection.delta,
        "envoyAdmin": envoy_admin_address(proxy.metadata),
    }


def _find(
    connections: Iterable[DebugConnection], wanted: str
) -> list[DebugConnection] | web.Response:
    """The streams of the node ``wanted`` names, oldest first (or the error answer)."""
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
    return sorted(candidates, key=lambda c: c.connected_at)


def _acked(streams: list[DebugConnection]) -> dict[str, list[tuple[str, Resource]]]:
    """Per type, what the newest stream watching it (else any stream) recorded, as a
    snapshot of the references: the record changes when ACKs arrive meanwhile."""
    merged: dict[str, Mapping[str, Resource]] = {}
    for stream in streams:  # oldest first: a newer stream watching a type replaces it
        for type_url, resources in stream.acked().items():
            if type_url not in merged or stream.wants(type_url) is not None:
                merged[type_url] = resources
    return {t: sorted(resources.items()) for t, resources in merged.items()}


async def _digests(
    held: Mapping[str, list[tuple[str, Resource]]], types: MessageTypes
) -> dict[str, dict[str, str]]:
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
