"""CDS: outbound clusters for every service port (and DestinationRule subset) a proxy sees.

Cluster names follow Istio (``outbound|9080|v1|reviews.bookinfo.svc.cluster.local``).
Resolution picks the discovery type: STATIC → EDS, DNS → STRICT_DNS,
DNS_ROUND_ROBIN → LOGICAL_DNS, NONE → ORIGINAL_DST (passthrough), DYNAMIC_DNS →
STRICT_DNS (Envoy's dynamic forward proxy is not used). ``BlackHoleCluster`` and
``PassthroughCluster`` are always present, as istiod sends them.

The cluster set of a scope is computed once per PushContext and shared by every
proxy of that scope (and transport: a REST-polling proxy's EDS clusters point at
REST, not ADS). The ResourceCache holds each cluster under its inputs, each service's
clusters as one group and each scope's set as one group, so a push finds a scope's
clusters in one lookup, and a scope that changed its other services' in one each.
A proxy's ``inbound|<port>||`` clusters hold no address of its own: they are made
once per context and port.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.push.cache import InputKey, Resource, ResourceCache, ResourceGroup
from pilothouse.push.scope import ProxyScope
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Resolution, Service, ServiceKey, ServicePort
from pilothouse.xds.builders.cluster import (
    ClusterInputs,
    Discovery,
    RestPolling,
    build_blackhole_cluster,
    build_cluster,
    build_passthrough_cluster,
)
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.builders.endpoint import LbEndpointInput
from pilothouse.xds.builders.names import inbound_cluster_name, outbound_cluster_name
from pilothouse.xds.builders.traffic_policy import effective_policy
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.inbound import InboundPort, inbound_ports
from pilothouse.xds.protocol.type_urls import CDS

_DISCOVERY = {
    Resolution.STATIC: Discovery.EDS,
    Resolution.DNS: Discovery.STRICT_DNS,
    Resolution.DNS_ROUND_ROBIN: Discovery.LOGICAL_DNS,
    Resolution.NONE: Discovery.ORIGINAL_DST,
    Resolution.DYNAMIC_DNS: Discovery.STRICT_DNS,
}


def rule_identity(rule: Config | None) -> tuple[Any, ...] | None:
    """What identifies a DestinationRule's content in a cache key."""
    if rule is None:
        return None
    return (rule.key, rule.origin.source, rule.resource_version)


def subsets_of(rule: Config | None) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """(name, sorted labels) of every subset of a DestinationRule."""
    if rule is None:
        return ()
    spec: Any = rule.spec
    return tuple((s.name, tuple(sorted(s.labels.items()))) for s in spec.subsets)


def encode(message: Any, name: str) -> Resource:
    body = to_any_bytes(message)
    return Resource(name, content_hash(body), body)


class ClusterGenerator:
    type_url = CDS

    def generate(self, given: GenerationInput) -> Resources:
        scope = given.scope
        shared: dict[str, Resource] = given.context.memo(
            ("cds", scope.key, given.rest), lambda: self._scope_clusters(given)
        )
        inbound = inbound_clusters(given)
        everything = {**shared, **{r.name: r for r in inbound}} if inbound else shared
        if given.names is None:
            return everything
        return {n: everything[n] for n in given.names if n in everything}

    def _scope_clusters(self, given: GenerationInput) -> dict[str, Resource]:
        """The scope's clusters; all from one cache entry when none of their inputs moved."""
        scope: ProxyScope = given.scope
        mesh = given.context.mesh
        services: ScopeServices = scope.memo("cds-services", lambda: ScopeServices.of(scope))
        versions = tuple(given.endpoints.version(s) for s in services.dns)
        key = InputKey(("cds-scope", services.key, versions, mesh, given.rest))
        group = given.cache.get_group(key)
        if group is not None:
            return {r.name: r for r in group.resources}
        out: dict[str, Resource] = {}
        depends: set[ConfigKey] = set()
        for hostname in sorted(scope.by_hostname):
            service = scope.by_hostname[hostname]
            rule = scope.destination_rule(service)
            built = service_clusters(service, rule, mesh, given.endpoints, given.cache, given.rest)
            depends.update(built.depends_on)
            for resource in built.resources:
                out[resource.name] = resource
        for resource in _fixed_clusters(given.cache, mesh):
            out[resource.name] = resource
        given.cache.put_group(key, ResourceGroup(tuple(out.values())), frozenset(depends))
        return out


class ScopeServices:
    """What a scope's clusters are built from, save endpoints: its services (by hostname)
    with their DestinationRules' identities, and which of them hold DNS endpoints."""

    __slots__ = ("dns", "key")

    def __init__(self, key: InputKey, dns: tuple[ServiceKey, ...]) -> None:
        self.key = key
        self.dns = dns

    @classmethod
    def of(cls, scope: ProxyScope) -> ScopeServices:
        services = [scope.by_hostname[hostname] for hostname in sorted(scope.by_hostname)]
        inputs = tuple((s, rule_identity(scope.destination_rule(s))) for s in services)
        dns = tuple(s.key for s in services if _DISCOVERY[s.resolution] in _DNS)
        return cls(InputKey(inputs), dns)


_DNS = frozenset({Discovery.STRICT_DNS, Discovery.LOGICAL_DNS})


def _dns_version(service: Service, endpoints: EndpointIndex) -> int:
    """The endpoint version a service's clusters are built at (0: they hold no endpoints)."""
    if _DISCOVERY[service.resolution] in (Discovery.STRICT_DNS, Discovery.LOGICAL_DNS):
        return endpoints.version(service.key)
    return 0


@dataclass(frozen=True, slots=True)
class ServiceClusters:
    """The clusters of one service (a port each, times its DestinationRule's subsets)."""

    resources: tuple[Resource, ...]
    depends_on: frozenset[ConfigKey]


def service_clusters(
    service: Service,
    rule: Config | None,
    mesh: MeshSettings,
    endpoints: EndpointIndex,
    cache: ResourceCache,
    rest: RestPolling | None,
) -> ServiceClusters:
    """One service's clusters: one cache entry for all of them when their inputs are known
    (a scope that changed still finds its other services' clusters in one lookup each)."""
    depends = {service.key.config_key, service.source}
    if rule is not None:
        depends.add(rule.key)
    key = (
        "cds-service",
        service,
        rule_identity(rule),
        _dns_version(service, endpoints),
        mesh,
        rest,
    )
    group = cache.get_group(key)
    if group is None:
        group = ResourceGroup(
            tuple(
                cluster_resource(
                    service, port, subset, labels, rule, mesh, endpoints, cache, eds_polling=rest
                )
                for port in service.ports
                for subset, labels in (("", ()), *subsets_of(rule))
            )
        )
        cache.put_group(key, group, frozenset(depends))
    return ServiceClusters(group.resources, frozenset(depends))


def cluster_resource(
    service: Service,
    port: ServicePort,
    subset: str,
    labels: tuple[tuple[str, str], ...],
    rule: Config | None,
    mesh: MeshSettings,
    endpoints: EndpointIndex,
    cache: ResourceCache,
    *,
    eds_polling: RestPolling | None = None,
) -> Resource:
    """One outbound cluster, from the cache when its inputs were seen before.

    ``eds_polling`` makes an EDS cluster poll REST for its endpoints (REST-mode proxies).
    """
    discovery = _DISCOVERY[service.resolution]
    if discovery is not Discovery.EDS:
        eds_polling = None  # only EDS clusters read it: keep one cache entry for the rest
    dns_endpoints: tuple[LbEndpointInput, ...] = ()
    endpoint_version = _dns_version(service, endpoints)
    key = ("cds", service, port, subset, rule_identity(rule), mesh, endpoint_version, eds_polling)
    found = cache.get(key)
    if found is not None:
        return found
    name = outbound_cluster_name(service.hostname, port.number, subset)
    if endpoint_version:
        dns_endpoints = tuple(
            LbEndpointInput(e.address, e.port, e.locality, e.weight, e.labels.pairs)
            for e in endpoints.endpoints_for(service.key, port.name, dict(labels) or None)
        )
    spec: Any = rule.spec if rule is not None else None
    inputs = ClusterInputs(
        name=name,
        discovery=discovery,
        protocol=port.protocol or "TCP",
        endpoints=dns_endpoints,
        dns_host=service.hostname,
        dns_port=port.endpoint_port,
        policy=effective_policy(spec, port.number, subset or None),
        connect_timeout=timedelta(seconds=mesh.connect_timeout),
        service_accounts=(),
        eds_polling=eds_polling,
    )
    resource = encode(build_cluster(inputs), name)
    depends = {service.key.config_key, service.source}
    if rule is not None:
        depends.add(rule.key)
    cache.put(key, resource, frozenset(depends))
    return resource


def inbound_clusters(given: GenerationInput) -> list[Resource]:
    """``inbound|<port>||`` for each inbound port of the proxy's workload (see inbound.py).

    They hold no address of the proxy's own, so proxies of one workload share them:
    each is looked up once per context.
    """
    out = []
    for inbound in inbound_ports(given):
        target = (inbound.port, inbound.protocol, inbound.target_host, inbound.target_port)
        make = functools.partial(_inbound_cluster, given, inbound)
        out.append(given.context.memo(("cds-inbound", target), make))
    return out


def _inbound_cluster(given: GenerationInput, inbound: InboundPort) -> Resource:
    timeout = timedelta(seconds=given.context.mesh.connect_timeout)
    if inbound.target_host.startswith("unix://") or not inbound.target_port:
        endpoint = LbEndpointInput(inbound.target_host)
    else:
        endpoint = LbEndpointInput(inbound.target_host, inbound.target_port)
    name = inbound_cluster_name(inbound.port)
    inputs = ClusterInputs(
        name=name,
        discovery=Discovery.STATIC,
        protocol=inbound.protocol,
        endpoints=(endpoint,),
        connect_timeout=timeout,
    )
    found = given.cache.get(("cds-inbound", inputs))
    if found is None:
        found = encode(build_cluster(inputs), name)
        given.cache.put(("cds-inbound", inputs), found, frozenset())
    return found


def _fixed_clusters(cache: ResourceCache, mesh: MeshSettings) -> tuple[Resource, ...]:
    """BlackHoleCluster and PassthroughCluster, built once per mesh settings."""
    out: list[Resource] = []
    timeout = timedelta(seconds=mesh.connect_timeout)
    for builder in (build_blackhole_cluster, build_passthrough_cluster):
        key = ("cds-fixed", builder.__name__, mesh)
        found = cache.get(key)
        if found is None:
            cluster = builder(timeout)
            found = encode(cluster, cluster.name)
            cache.put(key, found, frozenset())
        out.append(found)
    return tuple(out)
