"""A sidecar's default outbound listeners (no Sidecar egress ports), planned as istiod's.

Each service port the scope sees, services oldest first (then by name and namespace,
as istiod orders its push context's services: a Kubernetes Service's name, a
ServiceEntry host's hostname; services without a creation time last), lands on one
listener, keyed by address and port; ports without a declared protocol are left out
(pilothouse does not sniff protocols), and so are UDP ports (istiod's outbound
listeners are TCP: it builds none for them):

- HTTP ports share ``0.0.0.0_<port>`` on the route configuration ``<port>``, whose
  virtual hosts tell the services apart; the oldest HTTP service on the port gives
  the listener its protocol (HTTP, HTTP2, gRPC, ...), as istiod keeps the listener
  the first one made;
- the other ports (TCP, TLS, HTTPS, MongoDB, ...) of a service with an IP address take
  ``<address>_<port>``, a listener of their own; those of a headless service (resolution
  NONE, no address) take ``<endpoint address>_<port>`` for each of its endpoints
  (lds_headless.py); those of a service whose address is a CIDR range, or that has
  none, share ``0.0.0.0_<port>``.

A listener one service holds is that service's listener, as :func:`outbound_l4_listener`
builds it. When several non-HTTP services share one, each brings its chains
(:class:`~pilothouse.xds.builders.listener_shared.L4Chain`): a TLS or HTTPS service the
chains of its mesh ``tls`` routes (mesh_tls.py), or without any a chain matching its
own hostname as SNI (wildcards as written, ``*.example.com``) when it has no address;
any other service one chain for every connection, to its mesh ``tcp`` route's
destinations or its own cluster (mesh_tcp.py). A CIDR address narrows a service's
chains to that destination range. A server name an earlier chain took is left out of
later ones (Envoy refuses two chains matching one name); a chain left with no name, or
matching every connection after one that already does, is refused: so of two plain TCP
services without an address on one port the older one serves it, as in istiod.

An HTTP port keeps ``0.0.0.0_<port>`` against the non-HTTP ports of services without an
address on that port: istiod would serve both behind protocol sniffing, pilothouse
does not sniff, so those services get no listener on that port. Each refused service
is logged as ``outbound listener conflict`` (listener, the service that kept it, the
one refused) and noted as an :class:`~pilothouse.push.listener_conflicts.OutboundConflict`
beside the listeners, for istiod's ``pilot_conflict_outbound_listener_*`` gauges.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from pilothouse.push.listener_conflicts import OutboundConflict
from pilothouse.registry.model import SERVICE_KIND, Service
from pilothouse.xds.builders.http_connection_manager import is_http
from pilothouse.xds.builders.listener import WILDCARD_ADDRESS, listener_name
from pilothouse.xds.builders.listener_shared import L4Chain, build_shared_outbound_listener
from pilothouse.xds.builders.listener_sidecar import build_outbound_listener
from pilothouse.xds.generators.lds_headless import NO_LISTENER, HeadlessPort
from pilothouse.xds.generators.mesh_tcp import service_destinations
from pilothouse.xds.generators.mesh_tls import (
    ANY_NAME,
    TLS_PROTOCOLS,
    outbound_l4_listener,
    sni_chains,
)
from pilothouse.xds.generators.scope_inputs import ScopeInputs

log = logging.getLogger("pilothouse.xds")

CONFLICT: Final = "outbound listener conflict"


class PortClaim(NamedTuple):
    """A service port asking for a place on the listener of one address and port (a
    named tuple: one is made per service port of every scope)."""

    service: Service
    protocol: str
    cidr: str
    """The service's address when it is a range ("" otherwise)."""


class OutboundPlan(NamedTuple):
    """A sidecar's outbound listeners and the services refused a place on them."""

    listeners: list[Any]
    conflicts: list[OutboundConflict]


def default_outbound_listeners(
    scope: ScopeInputs, headless: Sequence[HeadlessPort] = ()
) -> OutboundPlan:
    """The scope's outbound listeners, by port then address, and the services refused
    (``headless``: the endpoint addresses of headless services' non-HTTP ports)."""
    conflicts: list[OutboundConflict] = []
    claims: dict[tuple[str, int], list[PortClaim]] = {}
    per_endpoint = {(p.hostname, p.port): p.addresses for p in headless}
    for service in sorted(scope.by_hostname.values(), key=_age):
        for service_port in service.ports:
            protocol = service_port.protocol.upper()
            if protocol in NO_LISTENER:
                continue
            number = service_port.number
            address, cidr = WILDCARD_ADDRESS, ""
            if not is_http(protocol):
                endpoints = per_endpoint.get((service.hostname, number))
                if endpoints is not None:  # a headless service's port: a listener each
                    for endpoint in endpoints:
                        claims.setdefault((endpoint, number), []).append(
                            PortClaim(service, protocol, "")
                        )
                    continue
                address, cidr = listen_address(service)
            claims.setdefault((address, number), []).append(PortClaim(service, protocol, cidr))
    listeners = []
    for (address, port), found in sorted(claims.items(), key=lambda item: item[0][::-1]):
        listeners.append(_listener(scope, address, port, found, conflicts))
    return OutboundPlan(listeners, conflicts)


def listen_address(service: Service) -> tuple[str, str]:
    """Where a service's non-HTTP ports listen: (its IP address, "") or, for a range or
    no address, (``0.0.0.0``, the range or "")."""
    if not service.addresses:
        return WILDCARD_ADDRESS, ""
    first = service.addresses[0]
    if "/" in first:
        return WILDCARD_ADDRESS, first
    return first, ""


def _age(service: Service) -> tuple[bool, float, str, str]:
    created = service.creation_time
    return (
        created is None,
        created.timestamp() if created else 0.0,
        registry_name(service),
        service.namespace,
    )


def registry_name(service: Service) -> str:
    """The name istiod breaks creation-time ties with: a Kubernetes Service's own name
    (the first label of its hostname), a ServiceEntry host's hostname."""
    if service.source.kind == SERVICE_KIND:
        return service.hostname.split(".", 1)[0]
    return service.hostname


def _listener(
    scope: ScopeInputs,
    address: str,
    port: int,
    claims: Sequence[PortClaim],
    conflicts: list[OutboundConflict],
) -> Any:
    http = [c for c in claims if is_http(c.protocol)]
    if http:
        kept = http[0]  # claims come oldest first: the oldest HTTP service's protocol
        for claim in claims:
            if not is_http(claim.protocol):
                conflicts.append(_refuse(address, port, kept, claim))
        return build_outbound_listener(
            address, port, kept.protocol, capture_none=False, rds_name=str(port)
        )
    if len(claims) == 1 and not claims[0].cidr:
        (only,) = claims
        return outbound_l4_listener(
            scope, address, port, only.protocol, only.service.hostname, capture_none=False
        )
    return build_shared_outbound_listener(
        address,
        port,
        _shared_chains(scope, address, port, claims, conflicts),
        allow_any=scope.allow_any,
    )


def _shared_chains(
    scope: ScopeInputs,
    address: str,
    port: int,
    claims: Sequence[PortClaim],
    conflicts: list[OutboundConflict],
) -> list[L4Chain]:
    """Every claim's chains, each name and each match-everything chain kept by the first
    claim that asks for it."""
    kept: list[L4Chain] = []
    names_taken: dict[tuple[str, str], PortClaim] = {}
    whole_taken: dict[str, PortClaim] = {}
    for claim in claims:
        for chain in _claim_chains(scope, address, port, claim):
            if not chain.server_names:
                holder = whole_taken.get(chain.destination_cidr)
                if holder is not None:
                    conflicts.append(_refuse(address, port, holder, claim))
                    continue
                whole_taken[chain.destination_cidr] = claim
                kept.append(chain)
                continue
            cidr = chain.destination_cidr
            names = tuple(n for n in chain.server_names if (cidr, n) not in names_taken)
            if not names:
                holder = names_taken[cidr, chain.server_names[0]]
                conflicts.append(_refuse(address, port, holder, claim))
                continue
            names_taken.update(((cidr, n), claim) for n in names)
            kept.append(
                L4Chain(names, chain.destination_cidr, chain.destinations, chain.stat_prefix)
            )
    return kept


def _claim_chains(scope: ScopeInputs, address: str, port: int, claim: PortClaim) -> list[L4Chain]:
    host = claim.service.hostname
    names: tuple[str, ...] = ()
    if claim.protocol in TLS_PROTOCOLS:
        routed = [
            L4Chain(
                tuple(n for n in chain.server_names if n != ANY_NAME),
                claim.cidr,
                chain.destinations,
                chain.stat_prefix,
            )
            for chain in sni_chains(scope, host, port)
        ]
        if routed:
            return routed
        if address == WILDCARD_ADDRESS:
            names = (host,)
    return [L4Chain(names, claim.cidr, service_destinations(scope, host, port), host)]


def _refuse(address: str, port: int, kept: PortClaim, refused: PortClaim) -> OutboundConflict:
    conflict = OutboundConflict(
        listener_name(address, port),
        kept.service.hostname,
        refused.service.hostname,
        refused.protocol,
        over_http=is_http(kept.protocol),
    )
    log.warning(
        CONFLICT,
        extra={
            "listener": conflict.listener,
            "accepted": conflict.accepted,
            "rejected": conflict.rejected,
            "protocol": conflict.protocol,
        },
    )
    return conflict
