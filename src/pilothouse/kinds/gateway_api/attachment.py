"""Which listeners of which Gateways a route attaches to, and why not when it does not.

As istiod does it (``gw/conversion.go``): each parentRef is tried against every listener
of the Gateway it names; ``port`` and ``sectionName`` narrow the listeners; the route's
kind must be one the listener allows; the route's namespace must be allowed by
``allowedRoutes.namespaces``; and the route's hostnames are intersected with the
listener's (wildcards on both sides, the spec's label-wise rule), less the hosts another
listener of the same port claims more specifically (listener isolation). A parentRef is
accepted when any listener accepts it; otherwise the reason reported is, by preference,
``NotAllowedByListeners``, ``NoMatchingListenerHostname``, ``NoMatchingParent``.
ReferenceGrants decide whether a reference across namespaces is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from pilothouse.api.k8s.gateway.v1 import gateway_pb2, reference_grant_pb2, shared_pb2
from pilothouse.config.model import Config
from pilothouse.kinds.gateway_api.kinds import GROUP

CONTROLLER: Final = "istio.io/gateway-controller"
DEFAULT_CLASS: Final = "istio"
"""The GatewayClass istiod creates when missing (controllerName :data:`CONTROLLER`)."""
HTTP_KINDS: Final = ("HTTPRoute", "GRPCRoute")
KINDS_BY_PROTOCOL: Final = {
    "HTTP": HTTP_KINDS,
    "HTTPS": HTTP_KINDS,
    "TCP": ("TCPRoute",),
    "TLS": ("TLSRoute",),
}
ISTIO_GROUP: Final = "networking.istio.io"
NOT_ALLOWED: Final = "NotAllowedByListeners"
NO_HOSTNAME: Final = "NoMatchingListenerHostname"
NO_PARENT: Final = "NoMatchingParent"
_PREFERENCE: Final = (NOT_ALLOWED, NO_HOSTNAME, NO_PARENT)


@dataclass(frozen=True, slots=True)
class Attached:
    """One listener a parentRef attached to, and the hostnames it serves there."""

    gateway: Config
    listener: gateway_pb2.Listener
    hostnames: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ParentResult:
    """What became of one parentRef: the listeners it attached to, or why none."""

    ref: shared_pb2.ParentReference
    attached: tuple[Attached, ...]
    reason: str = ""
    mesh_hosts: tuple[str, ...] = ()
    """For a mesh (GAMMA) parent, a Service or a ServiceEntry: the hosts whose sidecar
    routing it changes."""
    mesh: bool = False
    """Whether the parent is a Service or ServiceEntry (the mesh), not a Gateway."""

    @property
    def accepted(self) -> bool:
        return bool(self.attached or self.mesh_hosts)


def listener_kinds(listener: gateway_pb2.Listener) -> tuple[str, ...]:
    """The route kinds a listener takes: its protocol's, narrowed by ``allowedRoutes.kinds``."""
    supported = KINDS_BY_PROTOCOL.get(listener.protocol, ())
    if listener.protocol == "TLS" and (listener.tls.mode or "Terminate") == "Terminate":
        supported = ("TLSRoute", "TCPRoute")
    wanted = listener.allowed_routes.kinds
    if not wanted:
        return supported
    return tuple(k.kind for k in wanted if (k.group or GROUP) == GROUP and k.kind in supported)


def namespace_allowed(listener: gateway_pb2.Listener, gateway_ns: str, route_ns: str) -> bool:
    """``allowedRoutes.namespaces``: Same (the default), All, or a Selector (matched
    against the label ``kubernetes.io/metadata.name``, the only one known without the
    Namespace objects)."""
    namespaces = listener.allowed_routes.namespaces
    source = getattr(namespaces, "from") or "Same"
    if source == "All":
        return True
    if source == "Selector":
        labels = {"kubernetes.io/metadata.name": route_ns}
        selector = namespaces.selector
        if any(labels.get(k) != v for k, v in selector.match_labels.items()):
            return False
        for requirement in selector.match_expressions:
            value = labels.get(requirement.key)
            if requirement.operator == "In" and value not in requirement.values:
                return False
            if requirement.operator == "NotIn" and value in requirement.values:
                return False
            if requirement.operator == "Exists" and value is None:
                return False
            if requirement.operator == "DoesNotExist" and value is not None:
                return False
        return True
    return gateway_ns == route_ns


def _host_matches(wildcard: str, host: str) -> bool:
    """Whether ``host`` is within the ``*.suffix`` wildcard (at least one more label)."""
    return wildcard.startswith("*.") and host.endswith(wildcard[1:]) and host != wildcard[2:]


def intersect_hostnames(listener_host: str, route_hosts: Sequence[str]) -> tuple[str, ...]:
    """The hostnames a route serves on a listener (``*`` for any); empty: none match."""
    if not route_hosts:
        return (listener_host or "*",)
    if not listener_host:
        return tuple(dict.fromkeys(route_hosts))
    found: list[str] = []
    for host in route_hosts:
        if host == listener_host or _host_matches(listener_host, host):
            found.append(host)
        elif _host_matches(host, listener_host):
            found.append(listener_host)
    return tuple(dict.fromkeys(found))


def mesh_parents(
    route: Config,
    refs: Iterable[shared_pb2.ParentReference],
    domain: str,
    service_entries: dict[tuple[str, str], Config],
) -> tuple[ParentResult, ...]:
    """Each Service or ServiceEntry parentRef of ``route`` (GAMMA): the hosts it routes
    for (a Service's ``<name>.<ns>.svc.<domain>``, a ServiceEntry's ``hosts``; an unknown
    ServiceEntry: none, ``NoMatchingParent``)."""
    found: list[ParentResult] = []
    for ref in refs:
        namespace = ref.namespace or route.namespace
        if ref.group == "" and ref.kind == "Service":
            host = f"{ref.name}.{namespace}.svc.{domain}"
            found.append(ParentResult(ref, (), "", (host,), mesh=True))
        elif ref.group == ISTIO_GROUP and ref.kind == "ServiceEntry":
            entry = service_entries.get((namespace, ref.name))
            hosts = tuple(getattr(entry.spec, "hosts")) if entry is not None else ()  # noqa: B009
            found.append(ParentResult(ref, (), "" if hosts else NO_PARENT, hosts, mesh=True))
    return tuple(found)


def _isolated(
    hosts: tuple[str, ...],
    listener: gateway_pb2.Listener,
    listeners: Sequence[gateway_pb2.Listener],
) -> tuple[str, ...]:
    """Listener isolation: a host another listener of the same port and protocol claims
    more specifically (its hostname is the host, or a narrower wildcard covering it) is
    not served on ``listener``."""

    def rank(hostname: str) -> int:
        return 0 if not hostname else (1 if hostname.startswith("*.") else 2) * 1000 + len(hostname)

    kept: list[str] = []
    for host in hosts:
        claimed = any(
            other is not listener
            and other.port == listener.port
            and other.protocol == listener.protocol
            and other.hostname
            and (other.hostname == host or _host_matches(other.hostname, host))
            and rank(other.hostname) > rank(listener.hostname)
            for other in listeners
        )
        if not claimed:
            kept.append(host)
    return tuple(kept)


def attach(
    route: Config,
    refs: Iterable[shared_pb2.ParentReference],
    hostnames: Sequence[str],
    gateways: dict[tuple[str, str], Config],
) -> tuple[ParentResult, ...]:
    """Each Gateway parentRef of ``route`` (other parents are not this function's) and
    the listeners it attached to; refs to unknown Gateways get no result (istiod writes
    no status for a parent it does not own)."""
    results: list[ParentResult] = []
    for ref in refs:
        if (ref.group or GROUP) != GROUP or (ref.kind or "Gateway") != "Gateway":
            continue
        gateway = gateways.get((ref.namespace or route.namespace, ref.name))
        if gateway is None:
            continue
        spec = gateway.spec
        assert isinstance(spec, gateway_pb2.Gateway)
        attached: list[Attached] = []
        reasons: set[str] = set()
        for listener in spec.listeners:
            if ref.HasField("port") and ref.port != listener.port:
                reasons.add(NO_PARENT)
                continue
            if ref.section_name and ref.section_name != listener.name:
                reasons.add(NO_PARENT)
                continue
            served = _isolated(
                intersect_hostnames(listener.hostname, hostnames), listener, spec.listeners
            )
            if not served:
                reasons.add(NO_HOSTNAME)
                continue
            if route.kind not in listener_kinds(listener) or not namespace_allowed(
                listener, gateway.namespace, route.namespace
            ):
                reasons.add(NOT_ALLOWED)
                continue
            attached.append(Attached(gateway, listener, served))
        reason = "" if attached else next((r for r in _PREFERENCE if r in reasons), NO_PARENT)
        results.append(ParentResult(ref, tuple(attached), reason))
    return tuple(results)


def reference_granted(
    grants: Iterable[Config], from_kind: str, from_ns: str, to_kind: str, to_ns: str, name: str
) -> bool:
    """Whether an object of ``from_kind`` in ``from_ns`` may refer to ``to_kind`` ``name``
    in ``to_ns`` (always, in its own namespace; across, only with a ReferenceGrant in
    ``to_ns``). Core kinds (Service, Secret) have the empty group."""
    if from_ns == to_ns:
        return True
    for grant in grants:
        if grant.namespace != to_ns:
            continue
        spec = grant.spec
        assert isinstance(spec, reference_grant_pb2.ReferenceGrant)
        sources = getattr(spec, "from")
        if not any(
            f.group == GROUP and f.kind == from_kind and f.namespace == from_ns for f in sources
        ):
            continue
        if any(t.kind == to_kind and t.group == "" and t.name in ("", name) for t in spec.to):
            return True
    return False
