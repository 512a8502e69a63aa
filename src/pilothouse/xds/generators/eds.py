"""EDS: one ClusterLoadAssignment per watched cluster name, from the live endpoint index.

EDS reads the endpoint index directly, never a rebuilt PushContext: that is the fast
path for endpoint-only changes. A cluster's assignment is cached under its
:class:`AssignmentInputs` (name, the service's endpoints at the index's version, the
port name, the subset labels), so it is built once per endpoint change and shared by
every proxy watching it. A
watched name this proxy cannot resolve (unknown host, port or subset) gets no
resource: in SotW that is what "does not exist" looks like.

What names mean depends only on the scope's services and their DestinationRules' subsets
(:class:`EndpointNames`), so the answer to one set of watched names
(:class:`Assignments`) is kept in the ResourceCache under :class:`WatchInputs` (those,
and the names), shared by every proxy that asks the same in a scope that reads the same,
in this context or a later one. It holds
the endpoint versions it was read at and checks them: a proxy whose scope-mates asked
the same costs one comparison while the index did not move, a version check per service
when it did.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pilothouse.protocol.type_urls import EDS
from pilothouse.push.cache import Resource
from pilothouse.push.inputs import EndpointsAt, FrozenInputs, InputKey
from pilothouse.push.peer_authentication import PeerAuthenticationAt
from pilothouse.push.rule_reads import Subsets, subsets_of
from pilothouse.push.scope import ProxyScope, ScopeContext
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Resolution, Service, ServiceKey
from pilothouse.xds.builders.auto_mtls import runs_sidecar
from pilothouse.xds.builders.endpoint import LbEndpointInput, build_load_assignment
from pilothouse.xds.builders.names import Direction, outbound_cluster_name, parse_cluster_name
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.scope_rules import scope_rules


@dataclass(frozen=True, slots=True)
class EdsTarget:
    """What a watched cluster name resolves to in a scope: a service port and subset."""

    name: str
    service: ServiceKey
    port_name: str
    labels: tuple[tuple[str, str], ...]


class Assignments:
    """The assignments for one set of watched names, in scopes with the same services and
    subsets (kept in the ResourceCache under :class:`WatchInputs`, shared by every proxy
    that asks the same).

    Kept with the endpoint versions of the services they were loaded at (and the
    PeerAuthentications' revision): while those hold, the same resources are the answer;
    when one moved, each assignment is looked up again (in the ResourceCache, under its
    :class:`AssignmentInputs`, which name the versions: only the changed ones are built).
    """

    __slots__ = ("_checked", "_services", "_versions", "resources", "targets")

    def __init__(self, targets: tuple[EdsTarget, ...]) -> None:
        self.targets = targets
        self._services = tuple(dict.fromkeys(t.service for t in targets))
        self._versions: tuple[object, ...] | None = None
        self._checked: tuple[EndpointIndex, int, object] | None = None
        """The index and its revision (and the PeerAuthentications') the versions were
        last checked at: while neither moved, no service's version can have."""
        self.resources: dict[str, Resource] = {}

    def current(self, given: GenerationInput) -> dict[str, Resource]:
        index = given.endpoints
        revision = given.context.peer_authentications.revision
        checked = self._checked
        if (
            checked is not None
            and checked[0] is index
            and checked[1] == index.revision
            and checked[2] is revision
        ):
            return self.resources  # nothing in the index moved: one comparison, not N
        versions = (*(index.version(s) for s in self._services), revision)
        if versions != self._versions:
            self.resources = {t.name: EndpointGenerator.load(given, t) for t in self.targets}
            self._versions = versions
        self._checked = (index, index.revision, revision)
        return self.resources


class EndpointGenerator:
    type_url = EDS

    def generate(self, given: GenerationInput) -> Resources:
        cache = given.cache
        services = endpoint_names(given).services
        names = given.names
        if names is None:
            everything = AllNamesInputs(services)
            names = cache.value(everything, functools.partial(all_names, everything))
        watch = WatchInputs(services, names)
        watched = cache.value(watch, functools.partial(watched_assignments, watch))
        return watched.current(given)

    def assignment(self, given: GenerationInput, name: str) -> Resource | None:
        target = resolve(given.scope, name)
        return None if target is None else self.load(given, target)

    @staticmethod
    def load(given: GenerationInput, target: EdsTarget) -> Resource:
        """The target's assignment at the index's current version, cached across proxies."""
        inputs = AssignmentInputs(
            target.name,
            EndpointsAt.of(target.service, given.endpoints),
            target.port_name,
            target.labels,
            PeerAuthenticationAt.of(given.context.peer_authentications),
        )
        return given.cache.resource(inputs, build_assignment)


@dataclass(frozen=True, slots=True)
class EndpointNames:
    """What cluster names mean to a scope: its services by hostname, each with the
    subsets of its DestinationRule (all EDS reads of a rule: an edit elsewhere in the
    rule leaves it equal). Gathered once per scope."""

    services: InputKey


def endpoint_names(given: GenerationInput) -> EndpointNames:
    """The :class:`EndpointNames` of the proxy's scope."""

    def gather(_scope: ProxyScope, _context: ScopeContext) -> EndpointNames:
        rules = scope_rules(given).in_hostname_order()
        return EndpointNames(InputKey(tuple((s, readings.subsets) for s, _, readings in rules)))

    return given.scope.interned(EndpointNames, gather)


@dataclass(frozen=True, slots=True)
class AllNamesInputs:
    """What a wildcard EDS watch's names are made from: the scope's services and their
    subsets."""

    services: InputKey


def all_names(inputs: AllNamesInputs) -> frozenset[str]:
    """Every EDS cluster of the scope (a wildcard EDS watch, as REST clients may send)."""
    names: list[str] = []
    service: Service
    subsets: Subsets
    for service, subsets in inputs.services.parts:  # type: ignore[misc]
        if service.resolution is not Resolution.STATIC:
            continue
        names.extend(
            outbound_cluster_name(service.hostname, p.number, s)
            for p in service.ports
            for s in ("", *(name for name, _ in subsets))
        )
    return frozenset(names)


@dataclass(frozen=True, slots=True, eq=False)
class WatchInputs(FrozenInputs):
    """What the answer to one set of watched names is made from: the scope's services
    and their subsets (which say what each name means) and the names."""

    services: InputKey
    names: frozenset[str]


def watched_assignments(inputs: WatchInputs) -> Assignments:
    """The :class:`Assignments` of the names that mean something to the scope."""
    parts: tuple[tuple[Service, Subsets], ...] = inputs.services.parts  # type: ignore[assignment]
    by_host = {service.hostname: (service, subsets) for service, subsets in parts}
    read: dict[str, ServiceTargets] = {}  # each service read once, whatever names ask
    found: list[EdsTarget] = []
    for name in inputs.names:
        parsed = parse_cluster_name(name)
        if parsed is None or parsed.direction is not Direction.OUTBOUND:
            continue
        targets = read.get(parsed.host)
        if targets is None:
            held = by_host.get(parsed.host)
            if held is None:
                continue
            service, subsets = held
            targets = read[parsed.host] = ServiceTargets(service.key, service, subsets)
        target = targets.target(name, parsed.port, parsed.subset)
        if target is not None:
            found.append(target)
    return Assignments(tuple(found))


@dataclass(frozen=True, slots=True)
class AssignmentInputs:
    """What one ClusterLoadAssignment is built from: the endpoints, and the
    PeerAuthentications that may turn auto-mTLS off for some of them."""

    name: str
    endpoints: EndpointsAt
    port_name: str
    labels: tuple[tuple[str, str], ...]
    peer_authentications: PeerAuthenticationAt


def build_assignment(inputs: AssignmentInputs) -> Resource:
    """The assignment; an endpoint that runs a sidecar but whose workload's
    PeerAuthentication is DISABLE on its port is not marked for mutual TLS (istiod's
    mTLS checker), so auto-mTLS clients reach it in plaintext."""
    endpoints = inputs.endpoints.read(inputs.port_name, dict(inputs.labels) or None)
    policies = inputs.peer_authentications
    assignment = build_load_assignment(
        inputs.name,
        [
            LbEndpointInput(
                e.address,
                e.port,
                e.locality,
                e.weight,
                e.labels.pairs,
                plaintext=runs_sidecar(e.labels.pairs)
                and policies.disables(e.source.namespace, e.labels, e.port),
            )
            for e in endpoints
        ],
    )
    return encode(assignment, inputs.name)


def resolve(scope: ProxyScope, name: str) -> EdsTarget | None:
    """The service port and subset ``name`` means to the scope; None when it means nothing."""
    parsed = parse_cluster_name(name)
    if parsed is None or parsed.direction is not Direction.OUTBOUND:
        return None
    service = scope.service(parsed.host)
    if service is None:
        return None
    subsets = subsets_of(scope.destination_rule(service))
    return ServiceTargets(service.key, service, subsets).target(name, parsed.port, parsed.subset)


class ServiceTargets:
    """A service as cluster names read it: port names by number, subset labels by name."""

    __slots__ = ("key", "ports", "subsets")

    def __init__(self, key: ServiceKey, service: Service, subsets: Subsets) -> None:
        self.key = key
        self.ports: dict[int, str] = {}
        for port in service.ports:
            self.ports.setdefault(port.number, port.name)  # the first port of a number
        self.subsets = dict(subsets)

    def target(self, name: str, port: int, subset: str) -> EdsTarget | None:
        """What cluster ``name`` (of ``port`` and ``subset``) means; None: nothing."""
        port_name = self.ports.get(port)
        if port_name is None:
            return None
        labels: tuple[tuple[str, str], ...] = ()
        if subset:
            found = self.subsets.get(subset)
            if found is None:
                return None
            labels = found
        return EdsTarget(name, self.key, port_name, labels)
