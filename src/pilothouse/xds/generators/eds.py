"""EDS: one ClusterLoadAssignment per watched cluster name, from the live endpoint index.

EDS reads the endpoint index directly, never a rebuilt PushContext: that is the fast
path for endpoint-only changes. A cluster's assignment is cached under (name, the
service, the index's version for that service, the subset labels, the port name), so
it is built once per endpoint change and shared by every proxy watching it. A
watched name this proxy cannot resolve (unknown host, port or subset) gets no
resource: in SotW that is what "does not exist" looks like.
"""

from __future__ import annotations

from pilothouse.push.cache import Resource
from pilothouse.registry.model import Resolution
from pilothouse.xds.builders.endpoint import LbEndpointInput, build_load_assignment
from pilothouse.xds.builders.names import Direction, outbound_cluster_name, parse_cluster_name
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import encode, subsets_of
from pilothouse.xds.protocol.type_urls import EDS


class EndpointGenerator:
    type_url = EDS

    def generate(self, given: GenerationInput) -> Resources:
        names = given.names
        if names is None:
            names = frozenset(self._all_names(given))
        out: dict[str, Resource] = {}
        for name in names:
            resource = self.assignment(given, name)
            if resource is not None:
                out[name] = resource
        return out

    def assignment(self, given: GenerationInput, name: str) -> Resource | None:
        parsed = parse_cluster_name(name)
        if parsed is None or parsed.direction is not Direction.OUTBOUND:
            return None
        service = given.scope.service(parsed.host)
        if service is None:
            return None
        port = service.port_by_number(parsed.port)
        if port is None:
            return None
        labels: tuple[tuple[str, str], ...] = ()
        if parsed.subset:
            rule = given.scope.destination_rule(service)
            found = dict(subsets_of(rule)).get(parsed.subset)
            if found is None:
                return None
            labels = found
        index = given.endpoints
        key = ("eds", name, service.key, index.version(service.key), labels, port.name)
        cached = given.cache.get(key)
        if cached is not None:
            return cached
        endpoints = index.endpoints_for(service.key, port.name, dict(labels) or None)
        assignment = build_load_assignment(
            name,
            [
                LbEndpointInput(e.address, e.port, e.locality, e.weight, e.labels.pairs)
                for e in endpoints
            ],
        )
        resource = encode(assignment, name)
        given.cache.put(key, resource, frozenset({service.key.config_key}))
        return resource

    @staticmethod
    def _all_names(given: GenerationInput) -> list[str]:
        """Every EDS cluster of the scope (a wildcard EDS watch, as REST clients may send)."""
        names: list[str] = []
        for service in given.scope.by_hostname.values():
            if service.resolution is not Resolution.STATIC:
                continue
            rule = given.scope.destination_rule(service)
            subsets = ["", *(s for s, _ in subsets_of(rule))]
            names.extend(
                outbound_cluster_name(service.hostname, p.number, s)
                for p in service.ports
                for s in subsets
            )
        return names
