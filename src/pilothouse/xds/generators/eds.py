"""EDS: one ClusterLoadAssignment per watched cluster name, from the live endpoint index.

EDS reads the endpoint index directly, never a rebuilt PushContext: that is the fast
path for endpoint-only changes. A cluster's assignment is cached under its
:class:`AssignmentInputs` (name, the service's endpoints at the index's version, the
port name, the subset labels), so it is built once per endpoint change and shared by
every proxy watching it. A
watched name this proxy cannot resolve (unknown host, port or subset) gets no
resource: in SotW that is what "does not exist" looks like.

What names mean is the same for every proxy of a scope, so it is worked out once per
scope (a later context takes the scope over when it is unchanged), and so is the
answer to one set of watched names, kept with the endpoint versions it was read at
(:class:`Assignments`): a proxy whose scope-mates asked the same costs a version check
per service.
"""

from __future__ import annotations

from dataclasses import dataclass

from pilothouse.config.model import Config
from pilothouse.protocol.type_urls import EDS
from pilothouse.push.cache import Resource
from pilothouse.push.inputs import EndpointsAt
from pilothouse.push.peer_authentication import PeerAuthenticationAt
from pilothouse.push.rule_reads import subsets_of
from pilothouse.push.scope import ProxyScope
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Resolution, Service, ServiceKey
from pilothouse.xds.builders.auto_mtls import runs_sidecar
from pilothouse.xds.builders.endpoint import LbEndpointInput, build_load_assignment
from pilothouse.xds.builders.names import Direction, outbound_cluster_name, parse_cluster_name
from pilothouse.xds.generators.base import GenerationInput, Resources
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.scope_memo import predecessor_memo, scope_memo

MAX_REMEMBERED = 64
"""Distinct watch sets remembered per scope (a scope's proxies normally share one)."""


@dataclass(frozen=True, slots=True)
class EdsTarget:
    """What a watched cluster name resolves to in a scope: a service port and subset."""

    name: str
    service: ServiceKey
    port_name: str
    labels: tuple[tuple[str, str], ...]


class Assignments:
    """The assignments for one set of watched names in one scope (shared by its proxies).

    Kept with the endpoint versions of the services they were loaded at: while those
    versions hold, the same resources are the answer; when one moved, each assignment
    is looked up again (in the ResourceCache, which builds only the changed ones).
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
        scope = given.scope
        memo = scope_memo(scope)
        names = given.names
        if names is None:
            names = memo.eds_names
            if names is None:
                names = memo.eds_names = frozenset(self._all_names(given))
        answers = memo.eds_answers
        watched = answers.get(names)
        if watched is None:
            if len(answers) >= MAX_REMEMBERED:
                answers.clear()  # watch sets come and go: keep only recent ones
            targets = self._targets(given, names)
            watched = _inherited(scope, names, targets) or Assignments(targets)
            answers[names] = watched
        return watched.current(given)

    @staticmethod
    def _targets(given: GenerationInput, names: frozenset[str]) -> tuple[EdsTarget, ...]:
        # Names resolve the same way for every proxy of the scope: once per scope.
        known = scope_memo(given.scope).eds_targets
        if len(known) >= MAX_REMEMBERED * 64:
            known.clear()
        found: list[EdsTarget] = []
        for name in names:
            try:
                target = known[name]
            except KeyError:
                target = known[name] = resolve(given.scope, name)
            if target is not None:
                found.append(target)
        return tuple(found)

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
    known = scope_memo(scope).eds_services
    try:
        service = known[parsed.host]
    except KeyError:
        service = known[parsed.host] = _service_targets(scope, parsed.host)
    if service is None:
        return None
    port_name = service.ports.get(parsed.port)
    if port_name is None:
        return None
    labels: tuple[tuple[str, str], ...] = ()
    if parsed.subset:
        subset = service.subsets.get(parsed.subset)
        if subset is None:
            return None
        labels = subset
    return EdsTarget(name, service.key, port_name, labels)


class ServiceTargets:
    """A service as cluster names read it: port names by number, subset labels by name."""

    __slots__ = ("key", "ports", "subsets")

    def __init__(self, key: ServiceKey, service: Service, rule: Config | None) -> None:
        self.key = key
        self.ports: dict[int, str] = {}
        for port in service.ports:
            self.ports.setdefault(port.number, port.name)  # the first port of a number
        self.subsets = dict(subsets_of(rule))


def _service_targets(scope: ProxyScope, host: str) -> ServiceTargets | None:
    """The host's service as cluster names read it; the predecessor scope's reading when
    it had the very same service and DestinationRule."""
    service = scope.service(host)
    if service is None:
        return None
    rule = scope.destination_rule(service)
    previous = scope.predecessor
    if (
        previous is not None
        and previous.service(host) is service
        and previous.destination_rule(service) is rule
    ):
        held = predecessor_memo(scope)
        found = None if held is None else held.eds_services.get(host)
        if found is not None:
            return found
    return ServiceTargets(service.key, service, rule)


def _inherited(
    scope: ProxyScope, names: frozenset[str], targets: tuple[EdsTarget, ...]
) -> Assignments | None:
    """The predecessor scope's assignments for these names, when they mean the same."""
    held = predecessor_memo(scope)
    found = None if held is None else held.eds_answers.get(names)
    return found if found is not None and found.targets == targets else None
