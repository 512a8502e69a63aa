"""LDS: listeners for gateways (from Gateway servers) and sidecars (from Sidecar resources).

Router proxies get one listener per Gateway server address and port, built by the
gateway listener builder: HTTP with RDS ``http.<port>``, HTTPS terminated from file
credentials, TLS passthrough by SNI to the TLSRoutes' clusters, TCP to the TCPRoute's
clusters.

Sidecar proxies:

- with a ``Sidecar`` whose egress listeners name ports, one listener per egress
  listener on its ``bind`` address (``0.0.0.0`` when unset); ``captureMode: NONE`` or
  an explicit bind makes Envoy listen there itself (no iptables); HTTP ports use the
  route configuration named by the port, TCP ports forward to the single service on
  that port the listener imports;
- without one (Istio's default outbound view), the listeners istiod plans for the
  service ports seen (see lds_outbound.py): ``0.0.0.0_<port>`` for HTTP ports and for
  services without an address (TLS ones told apart by SNI), ``<address>_<port>`` for
  the other ports of services with one, all with ``bind_to_port: false`` (they take
  traffic only from ``virtualOutbound``), and ``virtualOutbound`` on
  ``proxyListenPort`` only when the proxy says it captures traffic (metadata
  ``INTERCEPTION_MODE`` REDIRECT or TPROXY): a sidecar without iptables must not grab
  a port it did not ask for;
- an inbound listener per inbound port of the proxy's own workload (see inbound.py:
  from Sidecar ``ingress`` listeners, bound; or from the WorkloadEntry that is this
  proxy, not bound), forwarding to ``inbound|<port>||`` (see CDS), its chains set by
  the PeerAuthentication mode of the workload's port (see listener_mtls.py).

Only the inbound listeners hold the proxy's address. Everything else is shared by the
proxies of a scope: :func:`build_listeners` builds it from a :class:`ListenerInputs`
value and nothing else (the scope's inputs, see scope_inputs.py, whether the proxy
captures traffic, and its transport), and the ResourceCache keeps it under that value,
so it survives pushes that leave the inputs alone. Inbound listeners are encoded once
per inputs value and address length and patched with each proxy's address (see
lds_inbound.py). The proxy's WasmPlugins are placed in each set (see wasm_plugins.py),
then its EnvoyFilters patch it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pilothouse.config.model import Config
from pilothouse.protocol.type_urls import LDS
from pilothouse.push.authorization import NO_AUTHORIZATION, WorkloadAuthorization
from pilothouse.push.cache import Resource, ResourceGroup
from pilothouse.push.hostnames import host_matches
from pilothouse.push.inputs import FrozenInputs
from pilothouse.push.telemetry import NO_TELEMETRY, ModeTelemetry
from pilothouse.xds.builders.access_control import AccessFilters, guard_listener
from pilothouse.xds.builders.cluster import RestPolling
from pilothouse.xds.builders.filter_chain import WeightedCluster, weighted_clusters
from pilothouse.xds.builders.http_connection_manager import is_http
from pilothouse.xds.builders.listener import WILDCARD_ADDRESS
from pilothouse.xds.builders.listener_gateway import (
    GatewayServer,
    SniRoute,
    plan_gateway_listeners,
)
from pilothouse.xds.builders.listener_rest import rds_over_rest
from pilothouse.xds.builders.listener_sidecar import (
    build_outbound_listener,
    build_virtual_outbound_listener,
)
from pilothouse.xds.builders.route_l4 import build_tcp_route_clusters, tls_route_matches
from pilothouse.xds.builders.route_match import resolve_gateway_name
from pilothouse.xds.builders.telemetry import apply_telemetry
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.envoy_filters import (
    GATEWAY,
    SIDECAR_INBOUND,
    SIDECAR_OUTBOUND,
    patched,
)
from pilothouse.xds.generators.inbound import inbound_ports
from pilothouse.xds.generators.lds_headless import HeadlessPort, headless_ports
from pilothouse.xds.generators.lds_inbound import inbound_listener
from pilothouse.xds.generators.lds_outbound import OutboundPlan, default_outbound_listeners
from pilothouse.xds.generators.mesh_tls import outbound_l4_listener
from pilothouse.xds.generators.routing import resolver_for
from pilothouse.xds.generators.scope_inputs import ScopeInputs, scope_inputs
from pilothouse.xds.generators.wasm_plugins import with_plugins

log = logging.getLogger("pilothouse.xds")

CAPTURE_NONE = 2
CAPTURING = frozenset({"REDIRECT", "TPROXY"})


class ListenerGenerator:
    type_url = LDS

    def generate(self, given: GenerationInput) -> Resources:
        everything = self._everything(given)
        if given.names is None:
            return everything
        return {n: everything[n] for n in given.names if n in everything}

    def _everything(self, given: GenerationInput) -> Mapping[str, Resource]:
        """The scope's outbound listeners (one cache lookup), then the proxy's inbound ones.

        Only inbound listeners carry the proxy's own address; everything else depends on
        the scope, the transport and whether the proxy captures traffic.
        """
        proxy = given.proxy
        capturing = (proxy.metadata or {}).get("INTERCEPTION_MODE", "") in CAPTURING
        authorization = (
            given.context.authorizations.for_workload(proxy.namespace, proxy.labels, given.cache)
            if proxy.is_router
            else NO_AUTHORIZATION
        )
        telemetry = given.context.selections.telemetry(proxy, given.cache)
        scope = scope_inputs(given)
        headless = (
            headless_ports(scope, given.endpoints, proxy.ip)
            if scope.headless_services and not proxy.is_router
            else ()
        )
        inputs = ListenerInputs(
            scope, capturing, given.rest, authorization, telemetry.client, headless
        )
        outbound = given.cache.group(inputs, build_listeners)
        if proxy.is_router:
            return patched(given, LDS, with_plugins(given, outbound.named(), GATEWAY), GATEWAY)
        given.context.listener_conflicts.record(outbound.notes)
        outbound_placed = with_plugins(given, outbound.named(), SIDECAR_OUTBOUND)
        inbound = inbound_ports(given)
        if not inbound:
            return patched(given, LDS, outbound_placed, SIDECAR_OUTBOUND)
        taken = outbound.notes
        listeners: dict[str, Resource] = {}
        for port in inbound:
            if not port.bind and (port.address, port.port) in taken:
                continue  # the egress listener owns that address; the cluster still exists
            resource = inbound_listener(given, port, telemetry.server)
            listeners[resource.name] = resource
        return {
            **patched(given, LDS, outbound_placed, SIDECAR_OUTBOUND),
            **patched(given, LDS, with_plugins(given, listeners, SIDECAR_INBOUND), SIDECAR_INBOUND),
        }


@dataclass(frozen=True, slots=True, eq=False)
class ListenerInputs(FrozenInputs):
    """What a scope's outbound listeners are built from: the scope's inputs, whether the
    proxy captures traffic (``virtualOutbound``), its transport and its client-side
    telemetry."""

    scope: ScopeInputs
    capturing: bool
    rest: RestPolling | None
    authorization: WorkloadAuthorization = NO_AUTHORIZATION
    """A gateway's AuthorizationPolicies and RequestAuthentications (sidecars': none,
    theirs guard the inbound listeners)."""
    telemetry: ModeTelemetry = NO_TELEMETRY
    """The proxy's client-side access logs and tracing (its Telemetry, see
    :mod:`pilothouse.push.telemetry`)."""
    headless: tuple[HeadlessPort, ...] = ()
    """The endpoint addresses of the scope's headless services' TCP ports, the proxy's
    own left out (see lds_headless.py)."""


def build_listeners(inputs: ListenerInputs) -> ResourceGroup:
    """The scope's listeners, encoded, noting the (address, port) each takes and the
    outbound listener conflicts of the plan."""
    scope = inputs.scope
    listeners, conflicts = (
        OutboundPlan(router_listeners(scope), []) if scope.router else outbound_listeners(inputs)
    )
    access = AccessFilters.of(inputs.authorization)
    for listener in listeners:
        guard_listener(listener, access)
        apply_telemetry(listener, inputs.telemetry, gateway=scope.router)
    if inputs.rest is not None:
        for listener in listeners:
            rds_over_rest(listener, inputs.rest)
    taken = frozenset(
        (listener.address.socket_address.address, listener.address.socket_address.port_value)
        for listener in listeners
    )
    resources = {listener.name: encode(listener, listener.name) for listener in listeners}
    return ResourceGroup(tuple(resources.values()), taken.union(conflicts))


def router_listeners(scope: ScopeInputs) -> list[Any]:
    """A gateway scope's listeners: one per Gateway server address and port."""
    servers = []
    for gateway, bound in scope.gateways:
        gateway_name = f"{gateway.namespace}/{gateway.name}"
        for server in gateway.spec.servers:  # type: ignore[attr-defined]
            port = int(server.port.number)
            resolver = resolver_for(scope.ports_by_host, port)
            tcp: tuple[WeightedCluster, ...] = ()
            tls: list[SniRoute] = []
            for entry in bound:
                spec: Any = entry.config.spec
                for tcp_route in spec.tcp:
                    if tcp or not _applies(tcp_route.match, port, gateway_name, entry.config):
                        continue
                    tcp = weighted_clusters(
                        build_tcp_route_clusters(
                            tcp_route, entry.config.namespace, resolver, port=port
                        )
                    )
                for tls_route in spec.tls:
                    matches = tls_route_matches(
                        tls_route,
                        port=port,
                        gateway=gateway_name,
                        vs_gateways=spec.gateways,
                        namespace=entry.config.namespace,
                    )
                    if not matches:
                        continue
                    clusters = weighted_clusters(
                        build_tcp_route_clusters(
                            tls_route, entry.config.namespace, resolver, port=port
                        )
                    )
                    hosts = tuple(h for m in matches for h in m.sni_hosts)
                    tls.append(SniRoute(hosts, clusters))
            servers.append(
                GatewayServer(
                    server,
                    gateway.name,
                    gateway.namespace,
                    tcp_route=tcp,
                    tls_routes=tuple(tls),
                )
            )
    plan = plan_gateway_listeners(servers)
    for skipped in plan.skipped:
        log.warning(
            "gateway server not served",
            extra={"namespace": scope.namespace, "reason": str(skipped)},
        )
    return list(plan.listeners)


def _applies(matches: Any, port: int, gateway: str, config: Config) -> bool:
    if not matches:
        return True
    for match in matches:
        if match.port and match.port != port:
            continue
        gateways = {resolve_gateway_name(g, config.namespace) for g in match.gateways}
        if gateways and gateway not in gateways:
            continue
        return True
    return False


def outbound_listeners(inputs: ListenerInputs) -> OutboundPlan:
    """A sidecar scope's outbound listeners: its Sidecar's egress ports, or every port
    seen (with the services refused there)."""
    scope = inputs.scope
    spec: Any = scope.sidecar.spec if scope.sidecar is not None else None
    egress = [e for e in spec.egress if e.port.number] if spec is not None else []
    if egress:
        listeners: list[Any] = []
        for entry in egress:
            built = _egress_listener(scope, entry)
            if built is not None:
                listeners.append(built)
        return OutboundPlan(listeners, [])
    planned = default_outbound_listeners(scope, inputs.headless)
    if inputs.capturing:
        planned.listeners.append(
            build_virtual_outbound_listener(port=scope.proxy_listen_port, allow_any=scope.allow_any)
        )
    return planned


def _egress_listener(scope: ScopeInputs, entry: Any) -> Any:
    port = int(entry.port.number)
    protocol = (entry.port.protocol or "TCP").upper()
    address = entry.bind or WILDCARD_ADDRESS
    capture_none = entry.capture_mode == CAPTURE_NONE or bool(entry.bind)
    if is_http(protocol):
        return build_outbound_listener(
            address, port, protocol, capture_none=capture_none, rds_name=str(port)
        )
    hosts = [h.partition("/")[2] for h in entry.hosts]
    services = [
        s
        for host, s in sorted(scope.by_hostname.items())
        if s.port_by_number(port) is not None and any(host_matches(p, host) for p in hosts)
    ]
    if len(services) != 1:
        log.warning(
            "TCP egress listener needs exactly one service",
            extra={"namespace": scope.namespace, "port": port, "services": len(services)},
        )
        return None
    return outbound_l4_listener(
        scope, address, port, protocol, services[0].hostname, capture_none=capture_none
    )
