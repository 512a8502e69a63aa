"""A sidecar's VirtualService ``tls`` routes: TLS connections to a service sent on by SNI.

As istiod's sidecar outbound listeners for TLS and HTTPS ports: each ``tls`` route of a
VirtualService bound to the mesh whose hosts cover the service (VirtualServices oldest
first, then by key, as the scope sees them), with a match that applies at the port and to
the proxies' namespace, gives a filter chain matched on the match's ``sniHosts`` (the
VirtualService's hosts when it names none) behind the TLS inspector, its ``tcp_proxy``
sending the connection, unopened, to the route's destinations (weighted clusters for
several, counted under ``<vs>.<namespace>`` as istiod does). A server name goes to the
first chain that claims it (Envoy refuses two chains matching the same name); a ``*``
SNI host takes the connections no name matches. Those, with no ``*`` route, go where the
port's ``tcp`` routes or the service's own cluster send them (:mod:`.mesh_tcp`), as
istiod's default chain does; on a listener several services share (see lds_outbound.py)
only the chains are used, as istiod's. Matches with ``destinationSubnets`` are left out: a
capture-less sidecar has no original destination to compare them with. This is how a
GAMMA TLSRoute (a Service parent) reaches sidecars.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]

from pilothouse.push.hostnames import host_matches
from pilothouse.xds.builders.filter_chain import (
    WeightedCluster,
    build_filter_chain,
    build_tcp_proxy,
    tcp_proxy_filter,
    weighted_clusters,
)
from pilothouse.xds.builders.listener import tls_inspector
from pilothouse.xds.builders.listener_sidecar import build_outbound_listener
from pilothouse.xds.builders.route_l4 import (
    TlsMatch,
    build_tcp_route_clusters,
    tcp_stat_prefix,
    tls_route_matches,
)
from pilothouse.xds.generators.mesh_tcp import MESH, service_destinations
from pilothouse.xds.generators.routing import resolver_for
from pilothouse.xds.generators.scope_inputs import ScopeInputs

TLS_PROTOCOLS: Final = frozenset({"TLS", "HTTPS"})
"""Port protocols whose sidecar listeners follow ``tls`` routes (istiod's ``IsTLS``)."""
ANY_NAME: Final = "*"


@dataclass(frozen=True, slots=True)
class SniChain:
    """One ``tls`` route match on a sidecar: the names it takes and where they go."""

    server_names: tuple[str, ...]
    destinations: tuple[WeightedCluster, ...]
    stat_prefix: str


def sni_chains(scope: ScopeInputs, host: str, port: int) -> tuple[SniChain, ...]:
    """The chains of the mesh ``tls`` routes for ``host`` at ``port``, each server name
    in the first chain claiming it (``*`` alone: the connections no name matches)."""
    found: list[SniChain] = []
    claimed: set[str] = set()
    seen: set[TlsMatch] = set()
    resolver = resolver_for(scope.ports_by_host, port)
    for entry, _ in scope.routes:
        if not entry.for_mesh or not any(host_matches(h, host) for h in entry.hosts):
            continue
        spec: Any = entry.config.spec
        namespace = entry.config.namespace
        for tls_route in spec.tls:
            matches = tls_route_matches(
                tls_route,
                port=port,
                gateway=MESH,
                vs_gateways=spec.gateways,
                namespace=namespace,
                proxy_namespace=scope.namespace,
                seen=seen,
            )
            names: list[str] = []
            for match in matches:
                if match.destination_subnets:
                    continue
                for name in match.sni_hosts or tuple(spec.hosts):
                    if name not in claimed:
                        claimed.add(name)
                        names.append(name)
            if not names:
                continue
            clusters = build_tcp_route_clusters(
                tls_route, namespace, resolver, port=port, domain_suffix=scope.domain_suffix
            )
            if not clusters:
                continue
            found.append(
                SniChain(
                    tuple(names),
                    weighted_clusters(clusters),
                    tcp_stat_prefix(clusters, entry.config.name, namespace),
                )
            )
    return tuple(found)


def outbound_l4_listener(
    scope: ScopeInputs,
    address: str,
    port: int,
    protocol: str,
    host: str,
    *,
    capture_none: bool,
) -> listener_pb2.Listener:
    """The sidecar's listener for the non-HTTP port ``port`` of service ``host``: a
    ``tcp_proxy`` where the mesh ``tcp`` routes (or the service's own cluster) send
    connections, and on TLS and HTTPS ports a chain per SNI of the mesh ``tls`` routes."""
    chains = sni_chains(scope, host, port) if protocol.upper() in TLS_PROTOCOLS else ()
    named = [c for c in chains if ANY_NAME not in c.server_names]
    catch_all = next((c for c in chains if ANY_NAME in c.server_names), None)
    fallback = (
        catch_all.destinations if catch_all is not None else service_destinations(scope, host, port)
    )
    listener = build_outbound_listener(
        address, port, protocol, capture_none=capture_none, destinations=fallback
    )
    if not named:
        return listener
    _prepend_sni_chains(listener, named)
    return listener


def _prepend_sni_chains(listener: listener_pb2.Listener, chains: Sequence[SniChain]) -> None:
    default = list(listener.filter_chains)
    del listener.filter_chains[:]
    for chain in chains:
        names = [n for n in chain.server_names if n != ANY_NAME]
        proxy = build_tcp_proxy(
            chain.destinations,
            stat_prefix=None if len(chain.destinations) == 1 else chain.stat_prefix,
        )
        listener.filter_chains.append(build_filter_chain([tcp_proxy_filter(proxy)], sni=names))
    listener.filter_chains.extend(default)
    listener.listener_filters.append(tls_inspector())
