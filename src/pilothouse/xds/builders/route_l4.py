"""VirtualService ``tcp`` and ``tls`` routes → what the listener side needs for ``tcp_proxy``.

These are helpers, not filters: the listener builders turn the clusters into a
``tcp_proxy`` (``cluster`` for one, ``weighted_clusters`` for several) and the
TLS matches into filter chain matches.

- Selection (:func:`l4_match_applies`), as istiod's ``matchTCP`` / ``matchTLS``:
  the match's ``port`` (0 = any) is the listener port; its ``gateways`` include
  the current gateway (none named: the VirtualService's own, ``mesh`` when
  those are empty too); ``source_labels`` are a subset of the proxy's labels;
  ``source_namespace`` is the proxy's namespace.  A route with no match applies
  whenever the VirtualService is bound to the current gateway.
- Clusters (:func:`build_tcp_route_clusters`): one destination → that cluster
  (its weight ignored, reported as 100); several → every destination with a
  positive weight, in order.  Unknown hosts get host-named clusters, as for HTTP
  (:mod:`route_destination`).
- TLS (:func:`tls_route_matches`): each applicable match gives its SNI hosts and
  destination subnets; a later match with the same SNI hosts and subnets as an
  earlier one can never be reached and is left out, as istiod does.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.push.hostnames import DEFAULT_DOMAIN_SUFFIX
from pilothouse.xds.builders.route_destination import DestinationResolver, destination_cluster
from pilothouse.xds.builders.route_match import current_gateways, gateway_set, labels_select

FULL_WEIGHT = 100


class ClusterWeight(NamedTuple):
    """A tcp_proxy destination: ``(cluster, weight)``."""

    cluster: str
    weight: int


@dataclass(frozen=True, slots=True)
class TlsMatch:
    """The runtime part of one TLS match: what the filter chain must match on."""

    sni_hosts: tuple[str, ...]
    destination_subnets: tuple[str, ...]


def l4_match_applies(
    match: vs_pb2.L4MatchAttributes | vs_pb2.TLSMatchAttributes,
    *,
    port: int,
    gateway: str | Collection[str] | None,
    vs_gateways: Iterable[str],
    namespace: str,
    proxy_labels: Mapping[str, str] | None = None,
    proxy_namespace: str | None = None,
) -> bool:
    """Whether a TCP or TLS match (of a VirtualService in ``namespace``) applies here."""
    if match.port and match.port != port:
        return False
    named = list(match.gateways)
    wanted = gateway_set(named if named else vs_gateways, namespace)
    if current_gateways(gateway).isdisjoint(wanted):
        return False
    if not labels_select(match.source_labels, proxy_labels):
        return False
    return not match.source_namespace or match.source_namespace == proxy_namespace


def tcp_route_applies(
    tcp_route: vs_pb2.TCPRoute,
    *,
    port: int,
    gateway: str | Collection[str] | None,
    vs_gateways: Iterable[str],
    namespace: str,
    proxy_labels: Mapping[str, str] | None = None,
    proxy_namespace: str | None = None,
) -> bool:
    """Whether any match of a TCP route applies (a route without matches always does)."""
    if len(tcp_route.match) == 0:
        return not current_gateways(gateway).isdisjoint(gateway_set(vs_gateways, namespace))
    return any(
        l4_match_applies(
            match,
            port=port,
            gateway=gateway,
            vs_gateways=vs_gateways,
            namespace=namespace,
            proxy_labels=proxy_labels,
            proxy_namespace=proxy_namespace,
        )
        for match in tcp_route.match
    )


def tcp_destination_subnets(
    tcp_route: vs_pb2.TCPRoute,
    *,
    port: int,
    gateway: str | Collection[str] | None,
    vs_gateways: Iterable[str],
    namespace: str,
    proxy_labels: Mapping[str, str] | None = None,
    proxy_namespace: str | None = None,
) -> tuple[str, ...] | None:
    """The destination subnets an applicable TCP route is limited to.

    ``()`` means any destination (a terminal route); ``None`` means the route
    does not apply.  Several matches with subnets are united, as istiod.
    """
    if len(tcp_route.match) == 0:
        applies = not current_gateways(gateway).isdisjoint(gateway_set(vs_gateways, namespace))
        return () if applies else None
    subnets: list[str] = []
    for match in tcp_route.match:
        if not l4_match_applies(
            match,
            port=port,
            gateway=gateway,
            vs_gateways=vs_gateways,
            namespace=namespace,
            proxy_labels=proxy_labels,
            proxy_namespace=proxy_namespace,
        ):
            continue
        if len(match.destination_subnets) == 0:
            return ()
        subnets.extend(match.destination_subnets)
    return tuple(subnets) if subnets else None


def build_tcp_route_clusters(
    tcp_route: vs_pb2.TCPRoute | vs_pb2.TLSRoute,
    namespace: str,
    resolver: DestinationResolver,
    *,
    port: int,
    domain_suffix: str = DEFAULT_DOMAIN_SUFFIX,
) -> list[ClusterWeight]:
    """The clusters (and weights) of a TCP or TLS route's destinations."""
    destinations = list(tcp_route.route)

    def cluster(destination: vs_pb2.RouteDestination) -> str:
        return destination_cluster(
            destination.destination,
            namespace,
            resolver,
            current_port=port,
            domain_suffix=domain_suffix,
        )

    if len(destinations) == 1:
        return [ClusterWeight(cluster(destinations[0]), FULL_WEIGHT)]
    return [
        ClusterWeight(cluster(destination), destination.weight)
        for destination in destinations
        if destination.weight > 0
    ]


def tcp_stat_prefix(clusters: list[ClusterWeight], vs_name: str, namespace: str) -> str:
    """istiod's tcp_proxy stat prefix: the cluster, or ``<vs>.<ns>`` when weighted."""
    if len(clusters) == 1:
        return clusters[0].cluster
    return f"{vs_name}.{namespace}"


def tls_route_matches(
    tls_route: vs_pb2.TLSRoute,
    *,
    port: int,
    gateway: str | Collection[str] | None,
    vs_gateways: Iterable[str],
    namespace: str,
    proxy_labels: Mapping[str, str] | None = None,
    proxy_namespace: str | None = None,
    seen: set[TlsMatch] | None = None,
) -> list[TlsMatch]:
    """The SNI (and subnet) matches of a TLS route that apply here, unreachable ones left out.

    Pass the same ``seen`` set across every TLS route of a listener to drop
    matches an earlier route already claimed.
    """
    claimed = set() if seen is None else seen
    out: list[TlsMatch] = []
    for match in tls_route.match:
        if not l4_match_applies(
            match,
            port=port,
            gateway=gateway,
            vs_gateways=vs_gateways,
            namespace=namespace,
            proxy_labels=proxy_labels,
            proxy_namespace=proxy_namespace,
        ):
            continue
        found = TlsMatch(tuple(match.sni_hosts), tuple(match.destination_subnets))
        if found in claimed:
            continue
        claimed.add(found)
        out.append(found)
    return out
