"""CDS: outbound clusters for every service port (and DestinationRule subset) a proxy sees.

Cluster names follow Istio (``outbound|9080|v1|reviews.bookinfo.svc.cluster.local``).
Resolution picks the discovery type: STATIC → EDS, DNS → STRICT_DNS,
DNS_ROUND_ROBIN → LOGICAL_DNS, NONE → ORIGINAL_DST (passthrough), DYNAMIC_DNS →
STRICT_DNS (Envoy's dynamic forward proxy is not used). ``BlackHoleCluster`` and
``PassthroughCluster`` are always present, as istiod sends them.

The cluster set of a scope is computed once per PushContext and shared by every
proxy of that scope (and transport: a REST-polling proxy's EDS clusters point at
REST, not ADS); each cluster is cached under its inputs across pushes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.scope import ProxyScope
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Resolution, Service, ServicePort
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
from pilothouse.xds.generators.inbound import inbound_ports
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
        scope: ProxyScope = given.scope
        mesh = given.context.mesh
        out: dict[str, Resource] = {}
        for hostname in sorted(scope.by_hostname):
            service = scope.by_hostname[hostname]
            rule = scope.destination_rule(service)
            for port in service.ports:
                for subset, labels in (("", ()), *subsets_of(rule)):
                    resource = cluster_resource(
                        service,
                        port,
                        subset,
                        labels,
                        rule,
                        mesh,
                        given.endpoints,
                        given.cache,
                        eds_polling=given.rest,
                    )
                    out[resource.name] = resource
        for resource in _fixed_clusters(given.cache, mesh):
            out[resource.name] = resource
        return out


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
    endpoint_version = 0
    if discovery in (Discovery.STRICT_DNS, Discovery.LOGICAL_DNS):
        endpoint_version = endpoints.version(service.key)
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
    """``inbound|<port>||`` for each inbound port of the proxy's workload (see inbound.py)."""
    out = []
    timeout = timedelta(seconds=given.context.mesh.connect_timeout)
    for inbound in inbound_ports(given):
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
        out.append(found)
    return out


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
