"""Who a connected proxy is: its Istio node id and metadata, parsed once into a frozen value.

Istio node ids have four parts, ``type~ip~id~domain``, for example
``sidecar~10.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local``. The namespace
comes from metadata ``NAMESPACE``, else from the id (``pod.namespace``), else from the
first label of the domain. Anything malformed is refused with a :class:`BadNode` naming
the problem, which the server turns into ``INVALID_ARGUMENT``.

Empty parts: the type and the id must be given; the ip may be empty only when metadata
``INSTANCE_IPS`` names the addresses (istiod requires an address from one or the other);
the domain may be empty, as istiod allows, when the namespace comes from metadata or the id.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from pilothouse.boundary.json_body import BadJson, read_json
from pilothouse.registry.model import NO_LABELS, Labels
from pilothouse.security.identity import Caller

MAX_NODE_ID = 1024
_CANONICAL_IPV4 = re.compile(
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"
)
"""An IPv4 address as :mod:`ipaddress` writes it (ASCII digits, no leading zero): a node's
address usually is, and is then kept as given, without parsing it (a connect storm
parses thousands)."""
_COMPACT_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""How a metadata value that is not a string is flattened (never changed: a constant, so
that each value does not build an encoder again as ``json.dumps`` with options does)."""


class ProxyType(StrEnum):
    SIDECAR = "sidecar"
    ROUTER = "router"
    WAYPOINT = "waypoint"
    ZTUNNEL = "ztunnel"
    AGENTGATEWAY = "agentgateway"


_PROXY_TYPES: Mapping[str, ProxyType] = MappingProxyType({t.value: t for t in ProxyType})
"""Proxy types by their node id spelling (a lookup, not an enum call per node)."""


class GeneratorFamily(StrEnum):
    """Which family of resources a proxy wants; Istio's ``GENERATOR`` metadata values.

    ``event`` is what ``istioctl`` sends when it asks for the debug types
    (``istio.io/debug/syncz``): a debug client, not a proxy.
    """

    ENVOY = "envoy"
    GRPC = "grpc"
    API = "api"
    EVENT = "event"


class BadNode(ValueError):
    """The node id or metadata cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class ProxyIdentity:
    """Everything pilothouse reads from a proxy's node, immutable for the stream's life."""

    type: ProxyType
    ip_addresses: tuple[str, ...]
    id: str
    domain: str
    namespace: str
    node_id: str
    node_cluster: str = ""
    cluster_id: str = ""
    labels: Labels = NO_LABELS
    generator: GeneratorFamily = GeneratorFamily.ENVOY
    istio_version: str = ""
    locality: str = ""
    metadata: Mapping[str, str] | None = None
    user_agent: str = ""
    caller: Caller | None = None
    """Who authentication proved the stream's peer to be; ``None`` on the plaintext
    port, where streams are unauthenticated."""

    @property
    def name(self) -> str:
        """``pod.namespace`` as istioctl shows it."""
        return self.id

    @property
    def pod_name(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def is_router(self) -> bool:
        return self.type is ProxyType.ROUTER

    @property
    def ip(self) -> str:
        return self.ip_addresses[0] if self.ip_addresses else ""


def parse_node(
    node_id: str,
    metadata: Mapping[str, Any] | None = None,
    *,
    node_cluster: str = "",
    locality: str = "",
    user_agent: str = "",
) -> ProxyIdentity:
    """Parse an Istio node id plus its metadata (a plain dict from the node's Struct)."""
    if not node_id:
        raise BadNode("node id is empty; expected type~ip~id~domain")
    if len(node_id) > MAX_NODE_ID:
        raise BadNode(f"node id is longer than {MAX_NODE_ID} characters")
    parts = node_id.split("~")
    if len(parts) != 4:
        raise BadNode(
            f"node id {node_id!r} has {len(parts)} part(s); expected 4: type~ip~id~domain"
        )
    kind, ip, ident, domain = parts
    meta: Mapping[str, Any] = metadata if metadata is not None else {}
    _require_parts(node_id, kind, ip, ident, meta.get("INSTANCE_IPS"))
    proxy_type = _PROXY_TYPES.get(kind)
    if proxy_type is None:
        allowed = ", ".join(t.value for t in ProxyType)
        raise BadNode(f"node id {node_id!r}: unknown proxy type {kind!r}; use {allowed}")
    ips = _ip_addresses(ip, meta.get("INSTANCE_IPS"), node_id)
    namespace = _namespace(meta.get("NAMESPACE"), ident, domain)
    if not namespace:
        raise BadNode(f"node id {node_id!r}: no namespace in metadata, id or domain")
    labels = _labels(meta.get("LABELS"), node_id)
    generator = _generator(meta.get("GENERATOR"), node_id)
    return ProxyIdentity(
        type=proxy_type,
        ip_addresses=ips,
        id=ident,
        domain=domain,
        namespace=namespace,
        node_id=node_id,
        node_cluster=node_cluster,
        cluster_id=str(meta.get("CLUSTER_ID") or ""),
        labels=labels,
        generator=generator,
        istio_version=str(meta.get("ISTIO_VERSION") or ""),
        locality=locality,
        metadata={k: v if type(v) is str else _flat(v) for k, v in sorted(meta.items())},
        user_agent=user_agent,
    )


def _require_parts(node_id: str, kind: str, ip: str, ident: str, instance_ips: Any) -> None:
    """Refuse the empty parts istiod cannot use, naming the part."""
    if not kind:
        allowed = ", ".join(t.value for t in ProxyType)
        raise BadNode(f"node id {node_id!r}: the type (1st part) is empty; use {allowed}")
    if not ip and not (isinstance(instance_ips, str) and instance_ips.strip(" ,")):
        raise BadNode(
            f"node id {node_id!r}: the ip (2nd part) is empty and metadata INSTANCE_IPS "
            "names no address"
        )
    if not ident:
        raise BadNode(f"node id {node_id!r}: the id (3rd part, pod.namespace) is empty")


def _ip_addresses(ip: str, instance_ips: Any, node_id: str) -> tuple[str, ...]:
    candidates: list[str] = []
    if isinstance(instance_ips, str) and instance_ips:
        candidates.extend(p.strip() for p in instance_ips.split(",") if p.strip())
    if ip:
        candidates.append(ip)
    out: list[str] = []
    for candidate in dict.fromkeys(candidates):  # the id's address is often INSTANCE_IPS'
        if _CANONICAL_IPV4.fullmatch(candidate):
            address = candidate
        else:
            try:
                address = str(ipaddress.ip_address(candidate))
            except ValueError:
                raise BadNode(f"node id {node_id!r}: {candidate!r} is not an IP address") from None
        if address not in out:
            out.append(address)
    return tuple(out)


def _namespace(explicit: Any, ident: str, domain: str) -> str:
    if isinstance(explicit, str) and explicit:
        return explicit
    if "." in ident:
        return ident.split(".", 1)[1].split(".", 1)[0]
    return domain.split(".", 1)[0] if domain else ""


def metadata_labels(raw: Any, node_id: str) -> Labels:
    """The labels of metadata ``LABELS`` (an object, or its JSON text); raises BadNode."""
    return _labels(raw, node_id)


def _labels(raw: Any, node_id: str) -> Labels:
    if raw is None or raw == "":
        return NO_LABELS
    if isinstance(raw, str):
        try:
            raw = read_json(raw.encode("utf-8", "surrogatepass"))
        except BadJson as bad:
            raise BadNode(
                f"node {node_id!r}: metadata LABELS is not a JSON object ({bad.reason})"
            ) from None
    if not isinstance(raw, Mapping):
        raise BadNode(f"node {node_id!r}: metadata LABELS must be an object of strings")
    return Labels.of({str(k): _flat(v) for k, v in raw.items()})


def _generator(raw: Any, node_id: str) -> GeneratorFamily:
    if raw is None or raw == "":
        return GeneratorFamily.ENVOY
    try:
        return GeneratorFamily(str(raw))
    except ValueError:
        allowed = ", ".join(g.value for g in GeneratorFamily)
        raise BadNode(f"node {node_id!r}: unknown GENERATOR {raw!r}; use {allowed}") from None


def _flat(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _COMPACT_JSON.encode(value)
