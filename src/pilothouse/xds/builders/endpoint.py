"""``ClusterLoadAssignment`` builders: endpoints grouped by locality.

The output satisfies both Envoy and grpcio's proxyless xDS client, which is the
stricter of the two (xds-protocol.md §6):

- every ``LocalityLbEndpoints`` has a ``locality`` message, even when the
  endpoints have no locality (then it is an empty ``Locality()``); without one
  grpcio NACKs the whole EDS resource;
- every ``LocalityLbEndpoints`` has ``load_balancing_weight`` ≥ 1, the sum of its
  endpoints' weights; without it grpcio ACKs but has no backends;
- every ``LbEndpoint`` has ``load_balancing_weight`` ≥ 1 (a weight of 0 in the
  input is read as 1, as Istio does for unweighted endpoints).

The order is deterministic whatever the input order: localities sorted by
(region, zone, sub_zone), endpoints by (address, port, then the rest of the
input), so equal inputs always encode to equal bytes.  Addresses written
``unix://<path>`` become ``pipe`` addresses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from envoy.config.core.v3 import address_pb2, base_pb2, health_check_pb2  # type: ignore[import-untyped]
from envoy.config.endpoint.v3 import (  # type: ignore[import-untyped]
    endpoint_components_pb2,
    endpoint_pb2,
)

from pilothouse.xds.builders.auto_mtls import runs_sidecar, tls_mode_metadata

UNIX_PREFIX: Final = "unix://"
MAX_WEIGHT: Final = 2**32 - 1
# Envoy's metadata namespace for labels that subset load balancing matches on.
LB_METADATA_NAMESPACE: Final = "envoy.lb"

HEALTH_STATUSES: Final = frozenset(health_check_pb2.HealthStatus.keys())


@dataclass(frozen=True, slots=True)
class LbEndpointInput:
    """One endpoint as the registry knows it.

    ``address`` is an IP, a host name (DNS clusters) or ``unix://<path>``.
    ``locality`` is ``"region/zone/subzone"``; trailing parts may be missing.
    ``labels`` are sorted (key, value) pairs, copied into the endpoint's
    ``envoy.lb`` metadata; ``security.istio.io/tlsMode: istio`` also marks it for
    auto-mTLS (``envoy.transport_socket_match``, see :mod:`.auto_mtls`) unless
    ``plaintext`` (its PeerAuthentication is DISABLE).
    ``health`` is an Envoy ``HealthStatus`` name.
    """

    address: str
    port: int = 0
    locality: str = ""
    weight: int = 1
    labels: tuple[tuple[str, str], ...] = ()
    health: str = "HEALTHY"
    plaintext: bool = False

    def __post_init__(self) -> None:
        if self.health not in HEALTH_STATUSES:
            raise ValueError(f"unknown health status {self.health!r}")
        if self.weight < 0:
            raise ValueError(f"negative endpoint weight {self.weight}")


def parse_locality(locality: str) -> tuple[str, str, str]:
    """``"region/zone/subzone"`` → ``(region, zone, sub_zone)``; missing parts are ``""``.

    Anything after the second ``/`` belongs to the sub-zone.
    """
    parts = locality.split("/", 2) if locality else []
    parts.extend([""] * (3 - len(parts)))
    return parts[0], parts[1], parts[2]


def build_address(address: str, port: int) -> address_pb2.Address:
    """A socket address, or a ``pipe`` for ``unix://<path>``."""
    if address.startswith(UNIX_PREFIX):
        return address_pb2.Address(pipe=address_pb2.Pipe(path=address[len(UNIX_PREFIX) :]))
    return address_pb2.Address(
        socket_address=address_pb2.SocketAddress(address=address, port_value=port)
    )


def build_lb_endpoint(endpoint: LbEndpointInput) -> endpoint_components_pb2.LbEndpoint:
    """One ``LbEndpoint`` with a positive weight and its health status."""
    lb_endpoint = endpoint_components_pb2.LbEndpoint(
        endpoint=endpoint_components_pb2.Endpoint(
            address=build_address(endpoint.address, endpoint.port)
        ),
        health_status=health_check_pb2.HealthStatus.Value(endpoint.health),
    )
    lb_endpoint.load_balancing_weight.value = _clamp_weight(endpoint.weight)
    if endpoint.labels:
        fields = lb_endpoint.metadata.filter_metadata[LB_METADATA_NAMESPACE].fields
        for key, value in sorted(endpoint.labels):
            fields[key].string_value = value
        if runs_sidecar(endpoint.labels) and not endpoint.plaintext:
            tls_mode_metadata(lb_endpoint.metadata)
    return lb_endpoint


def build_locality_endpoints(
    endpoints: Iterable[LbEndpointInput],
) -> list[endpoint_components_pb2.LocalityLbEndpoints]:
    """Group endpoints by locality, in the deterministic order described above."""
    groups: dict[tuple[str, str, str], list[LbEndpointInput]] = {}
    for endpoint in endpoints:
        groups.setdefault(parse_locality(endpoint.locality), []).append(endpoint)
    result = []
    for key in sorted(groups):
        members = sorted(groups[key], key=_endpoint_order)
        region, zone, sub_zone = key
        group = endpoint_components_pb2.LocalityLbEndpoints(
            locality=base_pb2.Locality(region=region, zone=zone, sub_zone=sub_zone),
            lb_endpoints=[build_lb_endpoint(member) for member in members],
        )
        # The locality message must be present even when all its strings are empty.
        group.locality.SetInParent()
        total = sum(_clamp_weight(member.weight) for member in members)
        group.load_balancing_weight.value = min(max(total, 1), MAX_WEIGHT)
        result.append(group)
    return result


def build_load_assignment(
    cluster_name: str, endpoints: Sequence[LbEndpointInput]
) -> endpoint_pb2.ClusterLoadAssignment:
    """The EDS resource for ``cluster_name`` (also used inline by STATIC clusters)."""
    return endpoint_pb2.ClusterLoadAssignment(
        cluster_name=cluster_name, endpoints=build_locality_endpoints(endpoints)
    )


def build_dns_load_assignment(
    cluster_name: str, endpoints: Sequence[LbEndpointInput], *, logical: bool = False
) -> endpoint_pb2.ClusterLoadAssignment:
    """The inline ``load_assignment`` of a STRICT_DNS or LOGICAL_DNS cluster.

    Addresses are host names that Envoy resolves.  A LOGICAL_DNS cluster takes
    exactly one endpoint: the first in the deterministic order.
    """
    if not endpoints:
        raise ValueError(f"DNS cluster {cluster_name} needs at least one endpoint")
    for endpoint in endpoints:
        if endpoint.address.startswith(UNIX_PREFIX):
            raise ValueError(f"DNS cluster {cluster_name} cannot use {endpoint.address}")
    chosen: Sequence[LbEndpointInput] = endpoints
    if logical:
        chosen = [min(endpoints, key=lambda e: (parse_locality(e.locality), _endpoint_order(e)))]
    return build_load_assignment(cluster_name, chosen)


def dns_endpoint(host: str, port: int, locality: str = "") -> LbEndpointInput:
    """The single endpoint of a DNS cluster that resolves ``host``."""
    return LbEndpointInput(address=host, port=port, locality=locality)


def _clamp_weight(weight: int) -> int:
    return min(max(weight, 1), MAX_WEIGHT)


def _endpoint_order(
    endpoint: LbEndpointInput,
) -> tuple[str, int, int, str, tuple[tuple[str, str], ...]]:
    return (endpoint.address, endpoint.port, endpoint.weight, endpoint.health, endpoint.labels)
