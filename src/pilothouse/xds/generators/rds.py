"""RDS: route configurations for sidecars (named by port) and gateways (``http.<port>``).

Sidecar route configuration ``<port>``: one virtual host per VirtualService (mesh
gateway) whose hosts include a service with that HTTP port, one per remaining service
on the port with a default route to its cluster, and istiod's catch-all (``allow_any``
to PassthroughCluster, or ``block_all`` under REGISTRY_ONLY). Envoy rejects a domain
listed twice, so a domain goes to the first virtual host that claims it (oldest
VirtualService first).

Gateway route configuration (``http.<port>``, ``https.<port>.<name>.<gateway>.<ns>``):
virtual hosts from the VirtualServices bound to the gateway whose hosts the server
admits (``ns/host`` rules), each host with and without the port; a 404 virtual host
when nothing is bound. Servers with ``httpsRedirect`` require TLS on every host.

Route configurations are shared by the proxies of a scope whose labels meet the same
``sourceLabels`` selectors. :func:`build_route` builds one from a :class:`RouteInputs`
value and nothing else: the scope's inputs (scope_inputs.py), the configuration's name
and those selectors (the labels matched against are derived from them, see
``routing.labels_meeting``; the proxy's namespace is the scope's). The ResourceCache
keeps it (or None, for a name that means nothing) under that value: a push that changes
none of them rebuilds no route. The answer to a whole set of watched names is kept too,
under :class:`RouteSetInputs`, so a proxy finds its routes in one lookup.

The route configurations of two namespaces' scopes differ by a few short domain names of
their own services: the virtual host of a service no VirtualService covers comes from
:func:`~pilothouse.xds.builders.route_virtual_host.service_virtual_host`, which encodes
each distinct one once, so another namespace's configuration decodes it instead.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]

from pilothouse.config.model import Config, ConfigKey
from pilothouse.protocol.type_urls import RDS
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.hostnames import host_matches
from pilothouse.push.indexes import RouteEntry
from pilothouse.xds.builders.http_connection_manager import is_http
from pilothouse.xds.builders.listener_gateway import gateway_route_name
from pilothouse.xds.builders.names import outbound_cluster_name
from pilothouse.xds.builders.route import build_http_routes
from pilothouse.xds.builders.route_virtual_host import (
    build_catch_all_virtual_host,
    build_route_configuration,
    build_virtual_host,
    service_virtual_host,
    sidecar_domains,
)
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.envoy_filters import GATEWAY, SIDECAR_OUTBOUND, patched
from pilothouse.xds.generators.routing import (
    LabelKey,
    label_key,
    labels_meeting,
    resolver_for,
)
from pilothouse.xds.generators.scope_inputs import ScopeInputs, scope_inputs


class RouteGenerator:
    type_url = RDS

    def generate(self, given: GenerationInput) -> Resources:
        scope = scope_inputs(given)
        names = given.names if given.names is not None else frozenset(route_names(scope))
        # routes may depend on the proxy's labels (sourceLabels matches)
        selectors = given.context.virtual_services.source_selectors
        labels = label_key(selectors, given.proxy.labels)
        cache = given.cache
        wanted = RouteSetInputs(scope, names, labels)
        built = cache.value(wanted, functools.partial(route_set, cache, wanted))
        return patched(given, RDS, built, GATEWAY if scope.router else SIDECAR_OUTBOUND)


@dataclass(frozen=True, slots=True)
class RouteSetInputs:
    """What the answer to one set of watched route names is made from: the scope's inputs,
    the names and the ``sourceLabels`` selectors the proxy meets (every proxy of a scope
    that watches the same names and meets the same selectors shares the answer: one
    lookup per proxy, not one per name)."""

    scope: ScopeInputs
    names: frozenset[str]
    labels: LabelKey


def route_set(cache: ResourceCache, inputs: RouteSetInputs) -> Mapping[str, Resource]:
    """The route configurations of the names that mean something to the scope, each
    found in the cache under its own :class:`RouteInputs` (shared with other name sets)."""
    out: dict[str, Resource] = {}
    for name in inputs.names:
        one = RouteInputs(inputs.scope, name, inputs.labels)
        resource = cache.value(one, functools.partial(build_route, one))
        if resource is not None:
            out[name] = resource
    return out


def route_names(scope: ScopeInputs) -> list[str]:
    """What a wildcard RDS watch gets: the route configuration of each Gateway server (a
    gateway scope), else of each HTTP port of the services."""
    if scope.router:
        return [
            route
            for gateway, _ in scope.gateways
            for server in gateway.spec.servers  # type: ignore[attr-defined]
            if (route := gateway_route_name(server, gateway.name, gateway.namespace))
        ]
    ports = {p.number for s, _ in scope.services for p in s.ports if is_http(p.protocol or "TCP")}
    return [str(p) for p in sorted(ports)]


@dataclass(frozen=True, slots=True)
class RouteInputs:
    """What one route configuration is built from: the scope's inputs, its name and the
    ``sourceLabels`` selectors the proxy meets."""

    scope: ScopeInputs
    name: str
    labels: LabelKey


def build_route(inputs: RouteInputs) -> Resource | None:
    """The route configuration ``inputs`` name, encoded (None: the name means nothing)."""
    build = sidecar_route_config if inputs.name.isdigit() else gateway_route_config
    config = build(inputs)
    return None if config is None else encode(config, inputs.name)


def sidecar_route_config(inputs: RouteInputs) -> Any:
    """Route configuration ``<port>``: virtual hosts for the VirtualServices and the
    services on the port, then the catch-all."""
    scope = inputs.scope
    port = int(inputs.name)
    suffix = scope.domain_suffix
    resolver = resolver_for(scope.ports_by_host, port)
    hashing = scope.hash_policies
    lookup = scope.delegate_lookup
    labels = labels_meeting(inputs.labels)
    namespace = scope.namespace
    by_hostname = scope.by_hostname
    on_port = {
        host: service
        for host, service in by_hostname.items()
        if (service_port := service.port_by_number(port)) is not None
        and is_http(service_port.protocol or "TCP")
    }
    used: set[str] = set()
    covered: set[str] = set()
    virtual_hosts = []
    for entry, _ in scope.routes:
        if not entry.for_mesh:
            continue
        hosts = [h for h in entry.hosts if h in on_port or _external(h, by_hostname)]
        # A concrete host matches only itself (taken above): only wildcards add services.
        wildcards = [h for h in entry.hosts if h == "*" or h.startswith("*.")]
        if wildcards:
            named = set(hosts)
            hosts += [
                s for s in on_port if s not in named and any(host_matches(h, s) for h in wildcards)
            ]
        if not hosts:
            continue
        routes = build_http_routes(
            entry.config.spec,  # type: ignore[arg-type]
            entry.config.namespace,
            resolver,
            port=port,
            gateway=None,
            vs_name=entry.config.name,
            proxy_labels=labels,
            proxy_namespace=namespace,
            hash_policy_for=hashing,
            lookup_delegate=lookup,
            domain_suffix=suffix,
        )
        if not routes:
            continue
        domains: list[str] = []
        for host in hosts:
            if host in on_port:
                candidates: Sequence[str] = sidecar_domains(host, port, namespace, suffix)
            else:
                candidates = [host, f"{host}:{port}"]
            domains.extend(_claim(candidates, used))
        if not domains:
            continue
        covered.update(hosts)
        virtual_hosts.append(build_virtual_host(f"{hosts[0]}:{port}", domains, routes))
    for host in sorted(on_port):
        if host in covered:
            continue
        domains = _claim(sidecar_domains(host, port, namespace, suffix), used)
        if not domains:
            continue
        cluster = outbound_cluster_name(host, port)
        virtual_hosts.append(
            service_virtual_host(f"{host}:{port}", domains, cluster, hashing(cluster))
        )
    virtual_hosts.append(build_catch_all_virtual_host(allow_any=scope.allow_any))
    return build_route_configuration(str(port), virtual_hosts)


def gateway_route_config(inputs: RouteInputs) -> Any:
    """Route configuration ``inputs.name`` of a gateway scope's servers (None: no server
    names it)."""
    scope, name = inputs.scope, inputs.name
    servers: list[tuple[Config, tuple[RouteEntry, ...], Any]] = [
        (gateway, bound, server)
        for gateway, bound in scope.gateways
        for server in gateway.spec.servers  # type: ignore[attr-defined]
        if gateway_route_name(server, gateway.name, gateway.namespace) == name
    ]
    if not servers:
        return None
    port = int(servers[0][2].port.number)
    resolver = resolver_for(scope.ports_by_host, port)
    hashing = scope.hash_policies
    lookup = scope.delegate_lookup
    redirect = any(server.tls.https_redirect for _, _, server in servers)
    used: set[str] = set()
    virtual_hosts = []
    for gateway, bound, server in servers:
        gateway_name = f"{gateway.namespace}/{gateway.name}"
        for entry in sorted(bound, key=_config_key):
            hosts = [
                h
                for h in entry.hosts
                if _server_admits(server.hosts, gateway.namespace, entry.config.namespace, h)
            ]
            if not hosts:
                continue
            routes = build_http_routes(
                entry.config.spec,  # type: ignore[arg-type]
                entry.config.namespace,
                resolver,
                port=port,
                gateway=gateway_name,
                vs_name=entry.config.name,
                hash_policy_for=hashing,
                lookup_delegate=lookup,
                domain_suffix=scope.domain_suffix,
            )
            if not routes:
                continue
            domains: list[str] = []
            for host in hosts:
                domains.extend(_claim(["*"] if host == "*" else [host, f"{host}:{port}"], used))
            if not domains:
                continue
            virtual_host = build_virtual_host(f"{hosts[0]}:{port}", domains, routes)
            if redirect:
                virtual_host.require_tls = rc_pb2.VirtualHost.ALL
            virtual_hosts.append(virtual_host)
    if not virtual_hosts:
        blackhole = rc_pb2.Route(name="blackhole")
        blackhole.match.prefix = "/"
        blackhole.direct_response.status = 404
        virtual_hosts.append(build_virtual_host(f"blackhole:{port}", ["*"], [blackhole]))
    return build_route_configuration(name, virtual_hosts)


def _config_key(entry: RouteEntry) -> ConfigKey:
    return entry.config.key


def _claim(candidates: Sequence[str], used: set[str]) -> list[str]:
    fresh = [d for d in dict.fromkeys(candidates) if d not in used]
    used.update(fresh)
    return fresh


def _external(host: str, known: Mapping[str, Any]) -> bool:
    """A concrete VirtualService host that is not a service (an external name)."""
    return not host.startswith("*") and host not in known


def _server_admits(server_hosts: Any, gateway_namespace: str, vs_namespace: str, host: str) -> bool:
    for entry in server_hosts:
        namespace, _, pattern = entry.rpartition("/")
        if not namespace:
            namespace = "*"
        if namespace == ".":
            namespace = gateway_namespace
        if namespace not in ("*", vs_namespace):
            continue
        if host_matches(pattern, host) or host_matches(host, pattern):
            return True
    return False
