"""What an Envoy subscribes to, read from what it was sent, and the messages behind the bytes.

Envoy asks for CDS and LDS by wildcard, then names what those resources point at:
the EDS service name of every EDS cluster, and the route configuration of every
HTTP connection manager that uses RDS. :class:`Subscriptions` reads those names
from generated resources (``Any`` bytes), decoding each distinct resource once.

:func:`message_of` turns a generated resource back into its protobuf message, so
that a baseline can serialise exactly what was generated.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.endpoint.v3 import endpoint_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf import any_pb2

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.cache import Resource

MESSAGES: Mapping[str, type[Any]] = {
    CDS: cluster_pb2.Cluster,
    EDS: endpoint_pb2.ClusterLoadAssignment,
    LDS: listener_pb2.Listener,
    RDS: route_pb2.RouteConfiguration,
}


def message_of(type_url: str, resource: Resource) -> Any:
    """The message a resource's ``Any`` bytes carry."""
    packed = any_pb2.Any.FromString(resource.body)
    message = MESSAGES[type_url]()
    if not packed.Unpack(message):
        raise TypeError(f"{resource.name} is a {packed.type_url}, not {type_url}")
    return message


def eds_name(cluster: Any) -> str | None:
    """The EDS service name an Envoy watches for ``cluster``; None if it is not EDS."""
    if cluster.type != cluster_pb2.Cluster.EDS:
        return None
    return str(cluster.eds_cluster_config.service_name or cluster.name)


def connection_managers(listener: Any) -> Iterator[Any]:
    chains = [*listener.filter_chains]
    if listener.HasField("default_filter_chain"):
        chains.append(listener.default_filter_chain)
    for chain in chains:
        for network_filter in chain.filters:
            if network_filter.typed_config.Is(hcm_pb2.HttpConnectionManager.DESCRIPTOR):
                manager = hcm_pb2.HttpConnectionManager()
                network_filter.typed_config.Unpack(manager)
                yield manager


def route_names(listener: Any) -> frozenset[str]:
    """The route configurations a listener's connection managers ask RDS for."""
    return frozenset(
        m.rds.route_config_name for m in connection_managers(listener) if m.HasField("rds")
    )


class Subscriptions:
    """EDS and RDS names from CDS and LDS resources; each distinct resource decoded once."""

    def __init__(self) -> None:
        self._eds: dict[tuple[str, str], str | None] = {}
        self._rds: dict[tuple[str, str], frozenset[str]] = {}

    def eds_names(self, clusters: Iterable[Resource]) -> frozenset[str]:
        found: set[str] = set()
        for resource in clusters:
            key = (resource.name, resource.version)
            if key not in self._eds:
                self._eds[key] = eds_name(message_of(CDS, resource))
            name = self._eds[key]
            if name is not None:
                found.add(name)
        return frozenset(found)

    def rds_names(self, listeners: Iterable[Resource]) -> frozenset[str]:
        found: set[str] = set()
        for resource in listeners:
            key = (resource.name, resource.version)
            if key not in self._rds:
                self._rds[key] = route_names(message_of(LDS, resource))
            found.update(self._rds[key])
        return frozenset(found)
