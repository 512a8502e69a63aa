"""The attributes an AuthorizationPolicy ``when`` condition may name, and their value rules.

Istio's keys: plain ones (``source.ip``) and indexed ones (``request.headers[x-user]``,
``request.auth.claims[groups]``); ``experimental.envoy.filters.*`` keys are accepted too.
Which attributes only exist on HTTP requests matters to the generator (a TCP filter cannot
check them), so the table says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pilothouse.config.validation.addresses import is_cidr, is_ip
from pilothouse.config.validation.ports import port_number_ok

_INDEXED = re.compile(r"(?P<attribute>[a-zA-Z.]+)\[(?P<index>[^\[\]]+(?:\]\[[^\[\]]+)*)\]")
"""``attribute[index]``; claims may be nested, ``request.auth.claims[a][b]`` (index ``a][b``)."""
EXPERIMENTAL_PREFIX = "experimental.envoy.filters."


@dataclass(frozen=True, slots=True)
class ConditionKey:
    """A parsed ``when`` key: its attribute and, for indexed attributes, the index."""

    attribute: str
    index: str = ""

    @property
    def http_only(self) -> bool:
        return self.attribute.startswith(("request.", EXPERIMENTAL_PREFIX))


PLAIN_ATTRIBUTES = frozenset(
    {
        "source.ip",
        "remote.ip",
        "source.namespace",
        "source.principal",
        "source.serviceAccount",
        "request.auth.principal",
        "request.auth.audiences",
        "request.auth.presenter",
        "destination.ip",
        "destination.port",
        "connection.sni",
    }
)
INDEXED_ATTRIBUTES = frozenset({"request.headers", "request.auth.claims"})


def parse_condition_key(key: str) -> ConditionKey | None:
    """The key as an attribute (and index), or None when Istio does not know it."""
    if key in PLAIN_ATTRIBUTES:
        return ConditionKey(key)
    if key.startswith(EXPERIMENTAL_PREFIX) and len(key) > len(EXPERIMENTAL_PREFIX):
        return ConditionKey(key)
    found = _INDEXED.fullmatch(key)
    if found is None or found["attribute"] not in INDEXED_ATTRIBUTES:
        return None
    if found["attribute"] == "request.headers" and "][" in found["index"]:
        return None
    return ConditionKey(found["attribute"], found["index"])


def condition_value_problem(key: ConditionKey, value: str) -> str | None:
    """What is wrong with one value of a condition, or None."""
    if key.attribute in ("source.ip", "remote.ip", "destination.ip"):
        ok = is_ip(value) or is_cidr(value)
        return None if ok else f"{value!r} is not a valid IP address or CIDR block"
    if key.attribute == "destination.port":
        ok = value.isdigit() and port_number_ok(int(value))
        return None if ok else f"{value!r} is not a valid port number"
    if key.attribute == "source.serviceAccount":
        ok = value.count("/") <= 1 and "" not in value.split("/")
        return None if ok else f"{value!r} must be a name or namespace/serviceaccount"
    return None
