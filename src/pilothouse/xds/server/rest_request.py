"""Reading a REST DiscoveryRequest without the proto3 JSON mapping, when it is plain.

Envoy's REST polls always look the same: ``node``, ``version_info``, maybe
``resource_names``, ``type_url`` and ``response_nonce``, proto field names, nothing
else. For a body of that shape, every field pilothouse reads can be taken straight
from ``json.loads``' dict; :func:`plain_poll` does that and returns None for anything
else (camelCase names, ``error_detail``, a value of an unexpected JSON type, a string
that is not valid UTF-8...), which then goes through ``json_format.ParseDict`` as before,
so every malformed request is refused with the same message.

The node is not checked here: :func:`node_key` is its text (without
``node.extensions``, which pilothouse never reads), and REST discovery keeps the
identities of nodes it has already parsed under that text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

PLAIN_FIELDS: Final = frozenset(
    {"node", "version_info", "resource_names", "type_url", "response_nonce"}
)
"""The fields, by proto name, a plain poll may carry."""


@dataclass(frozen=True, slots=True)
class PlainPoll:
    """What a plain poll asks: the fields REST discovery reads, and its node's text."""

    version_info: str
    type_url: str
    resource_names: tuple[str, ...]
    node_key: str


def plain_poll(data: dict[str, Any]) -> PlainPoll | None:
    """The fields of ``data`` (a request's JSON object) if it is a plain poll, else None."""
    if not PLAIN_FIELDS.issuperset(data):
        return None
    node = data.get("node")
    version_info = data.get("version_info", "")
    type_url = data.get("type_url", "")
    names = data.get("resource_names", [])
    if not (
        isinstance(node, dict)
        and _is_text(version_info)
        and _is_text(type_url)
        and _is_text(data.get("response_nonce", ""))
        and type(names) is list
        and all(_is_text(name) for name in names)
    ):
        return None
    return PlainPoll(version_info, type_url, tuple(names), node_key(node))


def node_key(node: dict[str, Any]) -> str:
    """The text of a node's JSON object, ``extensions`` left out: equal texts are equal
    nodes."""
    if "extensions" in node:
        node = {field: value for field, value in node.items() if field != "extensions"}
    return json.dumps(node, separators=(",", ":"))


def _is_text(value: object) -> bool:
    """A JSON string that a protobuf string field takes (no unpaired surrogates)."""
    if type(value) is not str:
        return False
    if value.isascii():
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True
