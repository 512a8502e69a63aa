"""CDS: outbound clusters for every service port (and DestinationRule subset) a proxy sees.

Cluster names follow Istio (``outbound|9080|v1|reviews.bookinfo.svc.cluster.local``).
Resolution picks the discovery type: STATIC → EDS, DNS → STRICT_DNS,
DNS_ROUND_ROBIN → LOGICAL_DNS, NONE → ORIGINAL_DST (passthrough), DYNAMIC_DNS →
STRICT_DNS (Envoy's dynamic forward proxy is not used). ``BlackHoleCluster`` and
``PassthroughCluster`` are always present, as istiod sends them.

The cluster set of a scope is shared by every proxy of that scope (and transport: a
REST-polling proxy's EDS clusters point at REST, not ADS). The ResourceCache holds each
service's clusters as one group under :class:`ServiceClusterInputs` and each scope's set
as one group under :class:`ScopeClusterInputs` (each builder takes its inputs value and
nothing else), so a proxy finds its scope's clusters in one lookup, and a scope that
changed its other services' in one each. What those inputs hold besides endpoints and
the transport is gathered once per scope (:class:`ScopeServices`).
A proxy's ``inbound|<port>||`` clusters hold no address of its own: proxies of one
workload share them, each under its :class:`ClusterInputs`.

Auto-mTLS (MeshConfig ``enableAutoMtls``): a MESH_INTERNAL service's clusters without
DestinationRule TLS take mutual TLS to its sidecar endpoints and plaintext to the rest
(see builders/auto_mtls.py), unless the PeerAuthentication of the service's namespace
(mesh- and namespace-wide, as istiod infers a service's mode) is DISABLE. Which
namespaces that holds for is part of the scope's inputs (:class:`ScopeServices`, gathered
with the PeerAuthentication index), so a PeerAuthentication edit reaches the clusters it
changes. Only a proxy whose stream proved
its identity gets it: SDS serves ``default`` to no other, and a cluster waiting for that
secret would never warm.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pilothouse.protocol.type_urls import CDS
from pilothouse.push.cache import Resource, ResourceCache, ResourceGroup
from pilothouse.push.inputs import ConfigRevision, EndpointsAt, FrozenInputs, InputKey
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.push.rule_reads import subsets_of
from pilothouse.push.scope import ProxyScope, ScopeContext
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Location, Resolution, Service, ServiceKey
from pilothouse.xds.builders.cluster import (
    ClusterInputs,
    Discovery,
    RestPolling,
    build_blackhole_cluster,
    build_cluster,
    build_passthrough_cluster,
    destination_rule_config_path,
)
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.builders.endpoint import LbEndpointInput
from pilothouse.xds.builders.names import inbound_cluster_name, outbound_cluster_name
from pilothouse.xds.builders.traffic_policy import effective_policy
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.envoy_filters import (
    GATEWAY,
    SIDECAR_INBOUND,
    SIDECAR_OUTBOUND,
    patched,
)
from pilothouse.xds.generators.inbound import InboundPort, inbound_ports
from pilothouse.xds.generators.scope_rules import ScopeRules, scope_rules

_DISCOVERY = {
    Resolution.STATIC: Discovery.EDS,
    Resolution.DNS: Discovery.STRICT_DNS,
    Resolution.DNS_ROUND_ROBIN: Discovery.LOGICAL_DNS,
    Resolution.NONE: Discovery.ORIGINAL_DST,
    Resolution.DYNAMIC_DNS: Discovery.STRICT_DNS,
}


def encode(message: Any, name: str) -> Resource:
    body = to_any_bytes(message)
    return Resource(name, content_hash(body), body)


class ClusterGenerator:
    type_url = CDS

    def generate(self, given: GenerationInput) -> Resources:
        router = given.proxy.is_router
        shared = patched(
            given, CDS, self._scope_clusters(given), GATEWAY if router else SIDECAR_OUTBOUND
        )
        inbound = inbound_clusters(given)
        everything: Mapping[str, Resource]
        if inbound:
            named = patched(given, CDS, {r.name: r for r in inbound}, SIDECAR_INBOUND)
            everything = {**shared, **named}
        else:
            everything = shared
        if given.names is None:
            return everything
        return {n: everything[n] for n in given.names if n in everything}

    def _scope_clusters(self, given: GenerationInput) -> Mapping[str, Resource]:
        """The scope's clusters; all from one cache entry when none of their inputs moved."""
        cache = given.cache
        inputs = services_of(given).cluster_inputs(
            given.endpoints, given.rest, given.proxy.caller is not None
        )
        return cache.group(inputs, functools.partial(build_scope_clusters, cache)).named()


def auto_mtls_namespaces(context: ScopeContext, scope: ProxyScope) -> tuple[str, ...]:
    """The namespaces of the scope's services whose clusters auto-mTLS applies to, for a
    proxy with a proved identity."""
    if not context.mesh.enable_auto_mtls:
        return ()
    index = context.peer_authentications
    return tuple(
        sorted(n for n in scope.service_namespaces if index.namespace_mode(n) != MtlsMode.DISABLE)
    )


@dataclass(frozen=True, slots=True)
class ScopeServices:
    """What a scope's clusters are built from, save endpoints and the transport: its
    services (by hostname) with their DestinationRules' revisions, which of them hold DNS
    endpoints, the namespaces auto-mTLS applies to (for a proxy with a proved identity)
    and the connect timeout. Gathered once per scope."""

    parts: InputKey
    dns: tuple[ServiceKey, ...]
    auto_mtls: tuple[str, ...] = ()
    connect_timeout: float = 0.0
    _over_ads: tuple[EndpointIndex, int, tuple[ScopeClusterInputs, ScopeClusterInputs]] | None = (
        field(default=None, init=False, repr=False, compare=False)
    )
    """The cluster inputs of an ADS proxy without, and with, a proved identity, with the
    endpoint index and its revision they read the DNS services' versions at (while it
    has not moved, none of those versions can have; without DNS services they read
    nothing of it): every proxy of the scope gets the very same inputs value, found in
    the cache by identity, not made and compared again."""

    def cluster_inputs(
        self, endpoints: EndpointIndex, rest: RestPolling | None, proved: bool
    ) -> ScopeClusterInputs:
        """The :class:`ScopeClusterInputs` of a proxy of the scope (auto-mTLS only for
        one with a proved identity: SDS gives no other a certificate)."""
        if rest is not None:
            return self._inputs(self._dns(endpoints), rest, proved)
        made = self._over_ads
        if made is None or (
            self.dns and (made[0] is not endpoints or made[1] != endpoints.revision)
        ):
            dns = self._dns(endpoints)
            made = (
                endpoints,
                endpoints.revision,
                (self._inputs(dns, None, False), self._inputs(dns, None, True)),
            )
            object.__setattr__(self, "_over_ads", made)
        return made[2][proved]

    def _dns(self, endpoints: EndpointIndex) -> tuple[EndpointsAt, ...]:
        return tuple(EndpointsAt.of(s, endpoints) for s in self.dns)

    def _inputs(
        self, dns: tuple[EndpointsAt, ...], rest: RestPolling | None, proved: bool
    ) -> ScopeClusterInputs:
        return ScopeClusterInputs(
            services=self.parts,
            dns=dns,
            connect_timeout=self.connect_timeout,
            rest=rest,
            auto_mtls=self.auto_mtls if proved else (),
        )


def services_of(given: GenerationInput) -> ScopeServices:
    """The :class:`ScopeServices` of the proxy's scope, gathered once per scope."""

    def gather(scope: ProxyScope, context: ScopeContext) -> ScopeServices:
        return scope_services(scope, context, scope_rules(given))

    return given.scope.interned(ScopeServices, gather)


def scope_services(scope: ProxyScope, context: ScopeContext, rules: ScopeRules) -> ScopeServices:
    services = rules.in_hostname_order()
    parts = tuple((s, revision) for s, revision, _ in services)
    dns = tuple(s.key for s, _, _ in services if _DISCOVERY[s.resolution] in _DNS)
    return ScopeServices(
        InputKey(parts), dns, auto_mtls_namespaces(context, scope), context.mesh.connect_timeout
    )


@dataclass(frozen=True, slots=True, eq=False)
class ScopeClusterInputs(FrozenInputs):
    """What a scope's outbound clusters are built from: its services with their rules'
    revisions (in hostname order), the endpoints of its DNS services, the connect timeout,
    the transport, and the namespaces auto-mTLS applies to (hashed once: the cache hashes
    a key again for each of its many dependencies)."""

    services: InputKey
    dns: tuple[EndpointsAt, ...]
    connect_timeout: float
    rest: RestPolling | None
    auto_mtls: tuple[str, ...] = ()


def build_scope_clusters(cache: ResourceCache, inputs: ScopeClusterInputs) -> ResourceGroup:
    """Every cluster of a scope: each service's from the cache (see :class:`ServiceClusterInputs`),
    then BlackHoleCluster and PassthroughCluster."""
    dns = {e.service: e for e in inputs.dns}
    out: dict[str, Resource] = {}
    service: Service
    rule: ConfigRevision | None
    for service, rule in inputs.services.parts:  # type: ignore[misc]
        wanted = ServiceClusterInputs(
            service,
            rule,
            dns.get(service.key),
            inputs.connect_timeout,
            inputs.rest,
            auto_mtls=service.location == Location.MESH_INTERNAL
            and service.namespace in inputs.auto_mtls,
        )
        for resource in cache.group(wanted, build_service_clusters).resources:
            out[resource.name] = resource
    for kind in FIXED_CLUSTERS:
        resource = cache.resource(FixedClusterInputs(kind, inputs.connect_timeout), fixed_cluster)
        out[resource.name] = resource
    return ResourceGroup(tuple(out.values()))


_DNS = frozenset({Discovery.STRICT_DNS, Discovery.LOGICAL_DNS})


@dataclass(frozen=True, slots=True, eq=False)
class ServiceClusterInputs(FrozenInputs):
    """What one service's clusters (a port each, times its DestinationRule's subsets) are
    built from. ``endpoints`` only for a DNS service, whose clusters hold them;
    ``auto_mtls`` when its clusters without DestinationRule TLS take auto-mTLS (hashed
    once, and compared by hash first: every scope holding the service looks it up)."""

    service: Service
    rule: ConfigRevision | None
    endpoints: EndpointsAt | None
    connect_timeout: float
    rest: RestPolling | None
    auto_mtls: bool = False


def build_service_clusters(inputs: ServiceClusterInputs) -> ResourceGroup:
    service = inputs.service
    rule = inputs.rule.config if inputs.rule is not None else None
    spec: Any = rule.spec if rule is not None else None
    discovery = _DISCOVERY[service.resolution]
    # only EDS clusters read it
    eds_polling = inputs.rest if discovery is Discovery.EDS else None
    config_path = (
        destination_rule_config_path(rule.namespace, rule.name) if rule is not None else ""
    )
    built: list[Resource] = []
    for port in service.ports:
        for subset, labels in (("", ()), *subsets_of(rule)):
            name = outbound_cluster_name(service.hostname, port.number, subset)
            dns_endpoints: tuple[LbEndpointInput, ...] = ()
            if inputs.endpoints is not None:
                dns_endpoints = tuple(
                    LbEndpointInput(e.address, e.port, e.locality, e.weight, e.labels.pairs)
                    for e in inputs.endpoints.read(port.name, dict(labels) or None)
                )
            cluster = ClusterInputs(
                name=name,
                discovery=discovery,
                protocol=port.protocol or "TCP",
                endpoints=dns_endpoints,
                dns_host=service.hostname,
                dns_port=port.endpoint_port,
                policy=effective_policy(spec, port.number, subset or None),
                connect_timeout=timedelta(seconds=inputs.connect_timeout),
                service_accounts=(),
                eds_polling=eds_polling,
                auto_mtls=inputs.auto_mtls,
                config_path=config_path,
            )
            built.append(encode(build_cluster(cluster), name))
    return ResourceGroup(tuple(built))


def inbound_clusters(given: GenerationInput) -> list[Resource]:
    """``inbound|<port>||`` for each inbound port of the proxy's workload (see inbound.py).

    They hold no address of the proxy's own, so proxies of one workload share them (the
    cache holds each under its inputs).
    """
    return [_inbound_cluster(given, inbound) for inbound in inbound_ports(given)]


def _inbound_cluster(given: GenerationInput, inbound: InboundPort) -> Resource:
    inputs = InboundClusterInputs(
        inbound.port,
        inbound.protocol,
        inbound.target_host,
        inbound.target_port,
        given.context.mesh.connect_timeout,
    )
    return given.cache.resource(inputs, inbound_cluster)


@dataclass(frozen=True, slots=True, eq=False)
class InboundClusterInputs(FrozenInputs):
    """What an ``inbound|<port>||`` cluster is built from: the port, its protocol, where
    the application listens and the connect timeout."""

    port: int
    protocol: str
    target_host: str
    target_port: int
    connect_timeout: float


def inbound_cluster(inputs: InboundClusterInputs) -> Resource:
    if inputs.target_host.startswith("unix://") or not inputs.target_port:
        endpoint = LbEndpointInput(inputs.target_host)
    else:
        endpoint = LbEndpointInput(inputs.target_host, inputs.target_port)
    return encode_cluster(
        ClusterInputs(
            name=inbound_cluster_name(inputs.port),
            discovery=Discovery.STATIC,
            protocol=inputs.protocol,
            endpoints=(endpoint,),
            connect_timeout=timedelta(seconds=inputs.connect_timeout),
        )
    )


def encode_cluster(inputs: ClusterInputs) -> Resource:
    """The cluster ``inputs`` describe, encoded (its inputs are the builder's own)."""
    return encode(build_cluster(inputs), inputs.name)


FIXED_CLUSTERS = ("BlackHoleCluster", "PassthroughCluster")


@dataclass(frozen=True, slots=True)
class FixedClusterInputs:
    """BlackHoleCluster or PassthroughCluster, and the connect timeout they carry."""

    name: str
    connect_timeout: float


def fixed_cluster(inputs: FixedClusterInputs) -> Resource:
    builder = (
        build_blackhole_cluster
        if inputs.name == "BlackHoleCluster"
        else (build_passthrough_cluster)
    )
    cluster = builder(timedelta(seconds=inputs.connect_timeout))
    if cluster.name != inputs.name:
        raise ValueError(f"{builder.__name__} built {cluster.name}, not {inputs.name}")
    return encode(cluster, cluster.name)
