"""A sidecar's VirtualService ``tcp`` routes: where a TCP port's service sends connections.

As istiod's sidecar outbound TCP listeners do: the first ``tcp`` route (VirtualServices
oldest first, then by key, as the scope sees them) of a VirtualService bound to the mesh
whose hosts cover the service, with a match that applies at the port and to the
proxies' namespace, gives the destinations
(:func:`~pilothouse.xds.builders.route_l4.build_tcp_route_clusters`); with none, the
service's own cluster. Matches on ``sourceLabels`` never apply here (sidecars of one
namespace share their listeners). This is also how a GAMMA TCPRoute (a Service parent)
reaches sidecars.
"""

from __future__ import annotations

from typing import Any, Final

from pilothouse.push.hostnames import host_matches
from pilothouse.xds.builders.filter_chain import WeightedCluster, weighted_clusters
from pilothouse.xds.builders.names import outbound_cluster_name
from pilothouse.xds.builders.route_l4 import build_tcp_route_clusters, tcp_route_applies
from pilothouse.xds.generators.routing import resolver_for
from pilothouse.xds.generators.scope_inputs import ScopeInputs

MESH: Final = "mesh"


def tcp_destinations(
    scope: ScopeInputs, host: str, port: int
) -> tuple[WeightedCluster, ...] | None:
    """The destinations of the first mesh ``tcp`` route for ``host`` at ``port`` (None:
    no VirtualService routes it; the service's own cluster serves)."""
    for entry, _ in scope.routes:
        if not entry.for_mesh or not any(host_matches(h, host) for h in entry.hosts):
            continue
        spec: Any = entry.config.spec
        namespace = entry.config.namespace
        for tcp_route in spec.tcp:
            if not tcp_route_applies(
                tcp_route,
                port=port,
                gateway=MESH,
                vs_gateways=spec.gateways,
                namespace=namespace,
                proxy_namespace=scope.namespace,
            ):
                continue
            resolver = resolver_for(scope.ports_by_host, port)
            clusters = build_tcp_route_clusters(
                tcp_route, namespace, resolver, port=port, domain_suffix=scope.domain_suffix
            )
            return weighted_clusters(clusters) or None
    return None


def service_destinations(scope: ScopeInputs, host: str, port: int) -> tuple[WeightedCluster, ...]:
    """Where connections to ``host`` at ``port`` go: the first mesh ``tcp`` route's
    destinations, or else the service's own cluster."""
    return tcp_destinations(scope, host, port) or (
        WeightedCluster(outbound_cluster_name(host, port), 1),
    )
