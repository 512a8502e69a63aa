"""CDS for proxyless gRPC: the clusters a client names, in the form gRPC accepts.

A gRPC client names every cluster it wants (the ones its routes use), and gets
exactly those: ``outbound|<port>|<subset>|<host>`` for a service its scope sees,
with the subset's DestinationRule policy merged as for Envoy
(:func:`~pilothouse.xds.builders.traffic_policy.effective_policy`). A wildcard
request (which gRPC never sends) gets every outbound cluster of the scope.

What differs from Envoy's clusters (grpcio's CDS parser NACKs the rest):

- discovery: STATIC services are EDS clusters over ADS; DNS and DNS_ROUND_ROBIN
  services are LOGICAL_DNS clusters with the one address gRPC resolves itself;
  NONE (passthrough) and DYNAMIC_DNS services have no gRPC form and no cluster;
- load balancing: gRPC knows only ROUND_ROBIN and RING_HASH. Istio's default
  (LEAST_REQUEST), LEAST_REQUEST, LEAST_CONN, RANDOM and PASSTHROUGH become
  ROUND_ROBIN; a MAGLEV consistent hash becomes RING_HASH (the hash key, on the
  route, is unchanged); warm-up is dropped (gRPC has no slow start);
- TLS: none (no certificate providers are configured for proxyless clients yet;
  gRPC NACKs an UpstreamTlsContext without them);
- kept as is because gRPC reads them: outlier detection (interval, ejection
  times and percentages; gRPC ejects only by success rate or failure percentage,
  so Istio's consecutive-error counts do not eject anything there) and the
  circuit breaker's ``max_requests`` (``http2MaxRequests``).

Validation warns about each of these differences for gRPC-targeted hosts
(:mod:`pilothouse.config.validation.proxyless_grpc`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.config.model import Config
from pilothouse.protocol.type_urls import CDS
from pilothouse.push.cache import Resource
from pilothouse.push.inputs import ConfigRevision, EndpointsAt
from pilothouse.push.rule_reads import subsets_of
from pilothouse.registry.model import Resolution, Service, ServicePort
from pilothouse.xds.builders.cluster import ClusterInputs, Discovery, build_cluster
from pilothouse.xds.builders.endpoint import LbEndpointInput
from pilothouse.xds.builders.names import Direction, outbound_cluster_name, parse_cluster_name
from pilothouse.xds.builders.traffic_policy import effective_policy
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import encode

LoadBalancerSettings = dr_pb2.LoadBalancerSettings

GRPC_DISCOVERY = {
    Resolution.STATIC: Discovery.EDS,
    Resolution.DNS: Discovery.LOGICAL_DNS,
    Resolution.DNS_ROUND_ROBIN: Discovery.LOGICAL_DNS,
}


def grpc_traffic_policy(policy: dr_pb2.TrafficPolicy) -> dr_pb2.TrafficPolicy:
    """``policy`` reduced to what gRPC's CDS accepts (see the module docstring)."""
    out = dr_pb2.TrafficPolicy()
    out.CopyFrom(policy)
    for unsupported in ("tls", "tunnel", "proxy_protocol"):
        out.ClearField(unsupported)
    lb = out.load_balancer
    if lb.WhichOneof("lb_policy") == "consistent_hash":
        if lb.consistent_hash.WhichOneof("hash_algorithm") == "maglev":
            lb.consistent_hash.ClearField("maglev")
    else:
        lb.simple = LoadBalancerSettings.ROUND_ROBIN
    lb.ClearField("warmup")
    lb.ClearField("warmup_duration_secs")
    return out


class GrpcClusterGenerator:
    type_url = CDS

    def generate(self, given: GenerationInput) -> Resources:
        names = given.names if given.names is not None else self._all_names(given)
        out: dict[str, Resource] = {}
        for name in names:
            resource = self.cluster(given, name)
            if resource is not None:
                out[name] = resource
        return out

    def cluster(self, given: GenerationInput, name: str) -> Resource | None:
        """The cluster ``name`` for this proxy, or None when it does not exist for it."""
        parsed = parse_cluster_name(name)
        if parsed is None or parsed.direction is not Direction.OUTBOUND:
            return None
        service = given.scope.service(parsed.host)
        if service is None or service.resolution not in GRPC_DISCOVERY:
            return None
        port = service.port_by_number(parsed.port)
        if port is None:
            return None
        rule = given.scope.destination_rule(service)
        if parsed.subset and parsed.subset not in dict(subsets_of(rule)):
            return None
        return _cluster_resource(given, service, port, parsed.subset, rule)

    @staticmethod
    def _all_names(given: GenerationInput) -> list[str]:
        names: list[str] = []
        for service in given.scope.by_hostname.values():
            if service.resolution not in GRPC_DISCOVERY:
                continue
            subsets = ["", *(s for s, _ in subsets_of(given.scope.destination_rule(service)))]
            names.extend(
                outbound_cluster_name(service.hostname, p.number, s)
                for p in service.ports
                for s in subsets
            )
        return names


def _cluster_resource(
    given: GenerationInput,
    service: Service,
    port: ServicePort,
    subset: str,
    rule: Config | None,
) -> Resource:
    discovery = GRPC_DISCOVERY[service.resolution]
    endpoints = None
    if discovery is Discovery.LOGICAL_DNS:
        endpoints = EndpointsAt.of(service.key, given.endpoints)
    inputs = GrpcClusterInputs(
        service,
        port,
        subset,
        ConfigRevision.of(rule),
        given.context.mesh.connect_timeout,
        endpoints,
    )
    return given.cache.resource(inputs, build_grpc_cluster)


@dataclass(frozen=True, slots=True)
class GrpcClusterInputs:
    """What one proxyless gRPC cluster is built from. ``endpoints`` only for a
    LOGICAL_DNS cluster, which holds them."""

    service: Service
    port: ServicePort
    subset: str
    rule: ConfigRevision | None
    connect_timeout: float
    endpoints: EndpointsAt | None


def build_grpc_cluster(inputs: GrpcClusterInputs) -> Resource:
    service, port, subset = inputs.service, inputs.port, inputs.subset
    rule = inputs.rule.config if inputs.rule is not None else None
    name = outbound_cluster_name(service.hostname, port.number, subset)
    spec: Any = rule.spec if rule is not None else None
    endpoints: tuple[LbEndpointInput, ...] = ()
    if inputs.endpoints is not None:
        labels = dict(subsets_of(rule)).get(subset, ()) if subset else ()
        endpoints = tuple(
            LbEndpointInput(e.address, e.port, e.locality, e.weight, e.labels.pairs)
            for e in inputs.endpoints.read(port.name, dict(labels) or None)
        )
    cluster = ClusterInputs(
        name=name,
        discovery=GRPC_DISCOVERY[service.resolution],
        protocol=port.protocol or "TCP",
        endpoints=endpoints,
        dns_host=service.hostname,
        dns_port=port.endpoint_port,
        policy=grpc_traffic_policy(effective_policy(spec, port.number, subset or None)),
        connect_timeout=timedelta(seconds=inputs.connect_timeout),
    )
    return encode(build_cluster(cluster), name)
