"""What a simulated proxy reads out of an encoded resource: its name and what it points at.

Decoding protobuf in Python is the expensive part of a simulated proxy, so it
is done as little as possible:

- a resource's name is read straight from the wire (field 1 of Cluster,
  Listener, RouteConfiguration and ClusterLoadAssignment) without decoding the
  message;
- only the types whose content decides the next subscription are decoded:
  clusters (the EDS name of an EDS cluster), listeners (``rds.route_config_name``
  of every HTTP connection manager, in filter chains and in ``api_listener``)
  and, for the proxyless gRPC flavour only, route configurations (the clusters
  the routes send to);
- ``ResourceReader`` remembers what it read per (type, bytes), so a fleet of
  proxies receiving the same encoded cluster decodes it once and all of them
  hold the same ``bytes`` object (and the same ``HeldResource`` when the
  version matches too).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2,
)

from pilothouse.protocol.client import ResourceLike
from pilothouse.protocol.client_watch import HeldResource
from pilothouse.protocol.type_urls import CDS, LDS, RDS, TYPE_PREFIX
from pilothouse.protowire import WireError, read_varint

HCM_TYPE_URL: Final = (
    TYPE_PREFIX
    + "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
)
NAME_FIELD: Final = 1


def string_field(data: bytes, number: int) -> str:
    """The last value of top-level string field ``number`` (proto3 semantics), or ``""``.

    Walks the top-level fields only, skipping the others by wire type; nothing
    is decoded but the field asked for.
    """
    found = ""
    pos = 0
    end = len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        wire_type = key & 7
        if wire_type == 0:
            _, pos = read_varint(data, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, pos = read_varint(data, pos)
            if key >> 3 == number:
                found = data[pos : pos + length].decode()
            pos += length
        elif wire_type == 5:
            pos += 4
        else:
            raise WireError(f"unsupported wire type {wire_type}")
        if pos > end:
            raise WireError("field runs past the end")
    return found


def cluster_eds_names(body: bytes) -> tuple[str, ...]:
    """The EDS resource name of an EDS cluster (service_name, else its name); else nothing."""
    cluster = cluster_pb2.Cluster.FromString(body)
    if cluster.WhichOneof("cluster_discovery_type") != "type":
        return ()
    if cluster.type != cluster_pb2.Cluster.EDS:
        return ()
    return (cluster.eds_cluster_config.service_name or cluster.name,)


def listener_route_names(body: bytes) -> tuple[str, ...]:
    """Route configuration names the listener's HTTP connection managers fetch over RDS."""
    listener = listener_pb2.Listener.FromString(body)
    configs: list[Any] = []
    chains = list(listener.filter_chains)
    if listener.HasField("default_filter_chain"):
        chains.append(listener.default_filter_chain)
    for chain in chains:
        configs.extend(
            network_filter.typed_config
            for network_filter in chain.filters
            if network_filter.HasField("typed_config")
        )
    if listener.HasField("api_listener"):
        configs.append(listener.api_listener.api_listener)
    return _unique(_rds_name(config) for config in configs)


def _rds_name(config: Any) -> str:
    if config.type_url != HCM_TYPE_URL:
        return ""
    manager = http_connection_manager_pb2.HttpConnectionManager.FromString(config.value)
    if manager.WhichOneof("route_specifier") != "rds":
        return ""
    return str(manager.rds.route_config_name)


def route_cluster_names(body: bytes) -> tuple[str, ...]:
    """Clusters the routes of a route configuration send traffic to."""
    config = route_pb2.RouteConfiguration.FromString(body)
    names: list[str] = []
    for host in config.virtual_hosts:
        for route in host.routes:
            if route.WhichOneof("action") != "route":
                continue
            action = route.route
            specifier = action.WhichOneof("cluster_specifier")
            if specifier == "cluster":
                names.append(action.cluster)
            elif specifier == "weighted_clusters":
                names.extend(weighted.name for weighted in action.weighted_clusters.clusters)
    return _unique(names)


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name in names if name))


_DECODERS: Final = {CDS: cluster_eds_names, LDS: listener_route_names, RDS: route_cluster_names}


@dataclass(frozen=True, slots=True)
class ResourceFacts:
    """One encoded resource as the proxy keeps it."""

    name: str
    body: bytes
    refs: tuple[str, ...] = ()
    """Names of the next type this resource makes the proxy subscribe to."""


class ResourceReader:
    """Reads names and references, remembering them per (type URL, bytes).

    ``decoded_types`` are the types whose references matter to the caller.
    The memory is bounded: past ``capacity`` entries it starts afresh, which
    costs only repeated decoding.  One reader may be shared by many proxies
    (of the same flavour) in one event loop.
    """

    def __init__(self, decoded_types: Iterable[str], capacity: int = 200_000) -> None:
        self._decoded = frozenset(decoded_types)
        self._capacity = capacity
        self._seen: dict[str, dict[bytes, ResourceFacts]] = {}
        self._held: dict[tuple[str, str, bytes], HeldResource] = {}
        self._size = 0
        self.decodes = 0
        """How many resources were actually decoded (the rest came from memory)."""

    def read(self, type_url: str, body: bytes, name: str | None = None) -> ResourceFacts:
        """Facts about ``body``; ``name`` when the envelope carries it (delta), else from the wire.

        Raises ``WireError`` or ``google.protobuf.message.DecodeError`` for bytes
        that do not parse.
        """
        seen = self._seen.get(type_url)
        if seen is None:
            seen = self._seen[type_url] = {}
        known = seen.get(body)
        if known is not None and (name is None or known.name == name):
            return known
        if name is None:
            name = string_field(body, NAME_FIELD)
        decoder = _DECODERS.get(type_url) if type_url in self._decoded else None
        refs: tuple[str, ...] = ()
        if decoder is not None:
            refs = decoder(body)
            self.decodes += 1
        facts = ResourceFacts(name, body, refs)
        if self._size >= self._capacity:
            self._seen = {type_url: {}}
            self._held = {}
            seen = self._seen[type_url]
            self._size = 0
        seen[body] = facts
        self._size += 1
        return facts

    def held(self, facts: ResourceLike, version: str) -> HeldResource:
        """The ``HeldResource`` for ``facts`` at ``version``, shared by every proxy holding it."""
        key = (facts.name, version, facts.body)
        known = self._held.get(key)
        if known is None:
            known = HeldResource(facts.name, version, facts.body, facts.refs)
            if len(self._held) >= self._capacity:
                self._held.clear()
            self._held[key] = known
        return known
