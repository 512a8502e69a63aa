"""A REST discovery request, read: what its answer depends on, or why it is refused.

:class:`~pilothouse.xds.server.rest.RestDiscovery` answers; this reads what it answers.
A body becomes a :class:`Poll` (the version the proxy holds, the names it asks for, its
node's identity), or raises :class:`Refused` with the HTTP status and what was wrong:

- a body that is not UTF-8, not JSON (:func:`~pilothouse.boundary.json_body.read_json`),
  not a JSON object, not a DiscoveryRequest, of another ``type_url`` than its path, or
  from a node without an id or with a malformed one is 400;
- a plain poll (:mod:`.rest_request`) from a node seen before is read from
  ``json.loads``' dict, its node's identity looked up by the node's JSON text; anything
  else, and any node not seen before, takes the full ``ParseDict`` path (and its error
  messages), with ``node.extensions`` dropped unread first;
- a NACK (``error_detail``) is logged and counted, and its poll is not repeatable (every
  arrival must be logged and counted again).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

from pilothouse.boundary.json_body import BadJson, read_json
from pilothouse.protocol.type_urls import is_wildcard_type
from pilothouse.push.proxy import BadNode, ProxyIdentity
from pilothouse.xds.server.ads import node_identity
from pilothouse.xds.server.rest_cache import Lru
from pilothouse.xds.server.rest_problem import describe
from pilothouse.xds.server.rest_request import node_key, plain_poll

log = logging.getLogger("pilothouse.xds.rest")


@dataclass(frozen=True, slots=True)
class Poll:
    """A request, read: what its answer depends on, and the version the proxy holds.

    ``names`` is None when the proxy gets everything of the type. ``repeatable`` is
    False for a NACK, whose every arrival must be logged and counted.
    """

    version_info: str
    names: frozenset[str] | None
    node_key: str
    proxy: ProxyIdentity
    repeatable: bool = True


class Refused(Exception):
    """A request answered with an error status and the reason, not with resources."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class PollReader:
    """Reads requests into polls; keeps each node's identity in ``nodes`` by the node's
    JSON text, and counts NACKs by short type name in ``nacks``."""

    def __init__(self, nodes: Lru[str, tuple[str, ProxyIdentity]], nacks: dict[str, int]) -> None:
        self.nodes = nodes
        self.nacks = nacks

    def read(self, kind: str, type_url: str, short: str, body: bytes) -> Poll:
        """The request read from ``body``: cheaply when it is a plain poll from a node
        seen before, else through the proto3 JSON mapping (raises Refused)."""
        data = _load_json(body)
        plain = plain_poll(data)
        if plain is not None and (not plain.type_url or plain.type_url == type_url):
            node = self.nodes.get(plain.node_key)
            if node is not None:
                names = None
                if not is_wildcard_type(type_url) and plain.resource_names:
                    names = frozenset(plain.resource_names)
                return Poll(plain.version_info, names, node[0], node[1])
        return self._read_fully(kind, type_url, short, data)

    def _read_fully(self, kind: str, type_url: str, short: str, data: dict[str, Any]) -> Poll:
        request = _to_request(data)
        if request.type_url and request.type_url != type_url:
            raise Refused(400, f"type_url {request.type_url!r} sent to /v3/discovery:{kind}")
        if not request.HasField("node") or not request.node.id:
            raise Refused(400, "the request must carry a node with an id")
        try:
            proxy = node_identity(request.node)
        except BadNode as problem:
            raise Refused(400, str(problem)) from None
        key = node_key(data["node"])
        self.nodes.put(key, (key, proxy))
        nack = request.HasField("error_detail")
        if nack:
            self.nacks[short] = self.nacks.get(short, 0) + 1
            log.warning(
                "proxy rejected %s version %s: %s",
                short,
                request.version_info or "(none)",
                request.error_detail.message,
                extra={"node": proxy.node_id, "type_url": type_url},
            )
        names: frozenset[str] | None = None
        if not is_wildcard_type(type_url) and request.resource_names:
            names = frozenset(request.resource_names)
        return Poll(request.version_info, names, key, proxy, repeatable=not nack)


def _load_json(body: bytes) -> dict[str, Any]:
    """The request's JSON object (raises Refused)."""
    try:
        data = read_json(body)
    except BadJson as problem:
        raise Refused(400, f"request body: {problem.reason}") from None
    if not isinstance(data, dict):
        raise Refused(400, "request body is not a JSON object (a DiscoveryRequest)")
    return data


def _to_request(data: dict[str, Any]) -> Any:
    """A ``DiscoveryRequest`` from its proto3 JSON object, unknown fields ignored.

    ``node.extensions`` (hundreds of entries in Envoy's requests) is dropped unread:
    nothing in pilothouse looks at it, and mapping it would cost most of the poll.
    """
    node = data.get("node")
    if isinstance(node, dict):
        node.pop("extensions", None)
    request = discovery_pb2.DiscoveryRequest()
    try:
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except (
        json_format.ParseError,
        ValueError,
        TypeError,
        OverflowError,  # a huge integer into a double (Struct values)
        RecursionError,
    ) as problem:
        raise Refused(400, f"request is not a DiscoveryRequest: {describe(problem)}") from None
    return request
