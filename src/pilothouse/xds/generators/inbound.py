"""The proxy's own workload: which inbound ports it has and where the application listens.

Two ways to know, as in Istio:

- a ``Sidecar`` ``ingress`` listener names the port and the application's
  ``defaultEndpoint`` (``127.0.0.1:8080``); Envoy binds that port itself (no iptables);
- otherwise the WorkloadEntry that *is* this proxy — same namespace, its address one of
  the proxy's IPs, its labels all carried by the proxy — and the services selecting it:
  one inbound port per service port, to the workload's port on 127.0.0.1. These
  listeners do not bind (traffic reaches them through iptables and ``virtualInbound``),
  so a proxy sharing 127.0.0.1 with its application never grabs the application's port.

Both feed the CDS (``inbound|<port>||`` clusters) and LDS generators.
:func:`inbound_mtls` is the PeerAuthentication mode of one of those ports,
:func:`inbound_authorization` the access-control policies of the workload.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pilothouse.push.authorization import WorkloadAuthorization
from pilothouse.push.cache import ResourceCache
from pilothouse.push.inputs import ConfigRevision, FrozenInputs, InputKey
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.push.scope import ProxyScope, ScopeContext
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Endpoint, Labels, Service
from pilothouse.xds.generators.base import GenerationInput

LOCALHOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class InboundPort:
    """One inbound port of the proxy's workload."""

    port: int
    protocol: str
    target_host: str
    target_port: int
    bind: bool
    address: str
    tls: Any = None
    workload_port: int = 0
    """The port PeerAuthentication's ``portLevelMtls`` names: the application's port for
    a WorkloadEntry's port, the listener's own for a Sidecar ingress listener."""


def inbound_ports(given: GenerationInput) -> tuple[InboundPort, ...]:
    """The inbound ports of the proxy's workload, kept in the resource cache under their
    inputs (:class:`IngressPortsInputs` or :class:`WorkloadPortsInputs`).

    Ports found through the workload's WorkloadEntry read the endpoints of the proxy's
    namespace, which change without a new PushContext (the EDS fast path): their inputs
    name that namespace's labelled endpoints (:class:`LabelledEndpointsInputs`, the same
    value for every proxy of the namespace until one of its services' endpoints moves),
    so a change elsewhere in the mesh leaves them found as they were. A proxy none of
    whose addresses holds a labelled endpoint has none, and nothing is looked up for it.
    """
    proxy, context = given.proxy, given.context
    if proxy.is_router:
        return ()
    sidecar = None
    if given.scope.key.sidecar is not None:
        sidecar = context.sidecars.by_key.get(given.scope.key.sidecar)
    spec: Any = sidecar.spec if sidecar is not None else None
    if spec is not None and spec.ingress:
        ingress = IngressPortsInputs(ConfigRevision.of(sidecar), proxy.ip)  # type: ignore[arg-type]
        return given.cache.value(ingress, functools.partial(ingress_ports, ingress))
    if not proxy.labels or not proxy.ip_addresses:
        return ()
    services = context.services.namespace_inputs.get(proxy.namespace)
    if services is None:
        return ()
    cache = given.cache
    workloads = given.scope.interned(NamespaceWorkloads, _namespace_workloads)
    labelled, by_address = workloads.labelled(services, given.endpoints, cache)
    addresses = proxy.ip_addresses
    if len(addresses) == 1:
        if addresses[0] not in by_address:
            return ()
    elif by_address.keys().isdisjoint(addresses):
        return ()
    workload = WorkloadPortsInputs(proxy.ip, addresses, proxy.labels, labelled)
    return cache.value(workload, functools.partial(workload_ports, cache, workload))


def inbound_mtls(given: GenerationInput, port: InboundPort) -> MtlsMode:
    """The mode the proxy's listener on ``port`` runs in: its workload's PeerAuthentication
    mode for the port.

    Mutual TLS needs the workload certificate, which SDS gives only to a proxy whose
    stream proved its identity (``caller``). A PERMISSIVE port of a proxy without one
    accepts plaintext only (a mutual-TLS chain would wait for secrets that never come,
    and hold the listener back); STRICT stays STRICT and refuses everything until the
    proxy has a certificate, rather than fall back to plaintext.
    """
    proxy = given.proxy
    policy = given.context.peer_authentications.workload_policy(proxy.namespace, proxy.labels)
    mode = policy.for_port(port.workload_port or port.port)
    if mode is MtlsMode.PERMISSIVE and proxy.caller is None:
        return MtlsMode.DISABLE
    return mode


def inbound_authorization(given: GenerationInput) -> WorkloadAuthorization:
    """The AuthorizationPolicies and RequestAuthentications of the proxy's workload."""
    proxy = given.proxy
    return given.context.authorizations.for_workload(proxy.namespace, proxy.labels, given.cache)


@dataclass(frozen=True, slots=True)
class IngressPortsInputs:
    """What the inbound ports of a proxy selected by a Sidecar with ``ingress`` listeners
    are built from: the Sidecar (by revision) and the proxy's IP address."""

    sidecar: ConfigRevision
    ip: str


def ingress_ports(inputs: IngressPortsInputs) -> tuple[InboundPort, ...]:
    """One bound port per ``ingress`` listener of the Sidecar."""
    spec: Any = inputs.sidecar.config.spec
    ports = []
    for ingress in spec.ingress:
        port = int(ingress.port.number)
        target = ingress.default_endpoint or f"{LOCALHOST}:{port}"
        host, _, target_port = target.rpartition(":")
        ports.append(
            InboundPort(
                port=port,
                protocol=(ingress.port.protocol or "TCP").upper(),
                target_host=host or LOCALHOST,
                target_port=int(target_port) if target_port.isdigit() else 0,
                bind=True,
                address=ingress.bind or inputs.ip or "0.0.0.0",
                tls=ingress.tls if ingress.HasField("tls") else None,
                workload_port=port,
            )
        )
    return tuple(ports)


@dataclass(frozen=True, slots=True, eq=False)
class WorkloadPortsInputs(FrozenInputs):
    """What the inbound ports of a proxy found through its WorkloadEntry are built from:
    its addresses and labels, and the labelled endpoints of its namespace."""

    ip: str
    ip_addresses: tuple[str, ...]
    labels: Labels
    endpoints: LabelledEndpointsInputs
    """The labelled endpoints of the proxy's namespace (its services, in the registry's
    order, at their endpoints' versions)."""


def workload_ports(cache: ResourceCache, inputs: WorkloadPortsInputs) -> tuple[InboundPort, ...]:
    """One port per service port whose endpoint on one of the proxy's addresses has labels
    the proxy carries (the first such endpoint of each port number, in service order)."""
    labelled = inputs.endpoints
    by_address = cache.value(labelled, functools.partial(labelled_endpoints, labelled))
    addresses = inputs.ip_addresses
    candidates: Iterable[Candidate]
    if len(addresses) == 1:
        candidates = by_address.get(addresses[0], ())  # already in position order
    else:
        candidates = sorted(
            (c for a in set(addresses) for c in by_address.get(a, ())), key=_position
        )
    found: dict[int, InboundPort] = {}
    for _, service, endpoint in candidates:
        if not inputs.labels.matches(endpoint.labels):
            continue
        service_port = service.port_by_name(endpoint.service_port_name)
        if service_port is None or service_port.number in found:
            continue
        found[service_port.number] = InboundPort(
            port=service_port.number,
            protocol=(service_port.protocol or "TCP").upper(),
            target_host=LOCALHOST,
            target_port=endpoint.port,
            bind=False,
            address=inputs.ip,
            workload_port=endpoint.port or service_port.number,
        )
    return tuple(found[p] for p in sorted(found))


Candidate = tuple[int, Service, Endpoint]
"""(position in the namespace's service-then-endpoint order, service, endpoint)."""


ByAddress = Mapping[str, list[Candidate]]
"""A namespace's labelled endpoints by address, each address's in position order."""


def _position(candidate: Candidate) -> int:
    return candidate[0]


@dataclass(frozen=True, slots=True, eq=False)
class LabelledEndpointsInputs(FrozenInputs):
    """What a namespace's labelled endpoints are read from: its services and the endpoint
    versions of each (compared; the index rides along for the builder to read)."""

    services: InputKey
    versions: tuple[int, ...]
    index: EndpointIndex = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class NamespaceWorkloads:
    """Where a scope's proxies find their namespace's labelled endpoints: the one
    :class:`LabelledEndpointsInputs` value (and the map built under it) for the endpoint
    index at its current revision, worked out by the first proxy that asks and read by
    every other (one identity check each, no walk over the namespace's services)."""

    _at: list[tuple[InputKey, EndpointIndex, int, LabelledEndpointsInputs, ByAddress]] = field(
        default_factory=list, repr=False, compare=False
    )
    """The last answer, with the services, the index and its revision it was read at."""

    def labelled(
        self, services: InputKey, index: EndpointIndex, cache: ResourceCache
    ) -> tuple[LabelledEndpointsInputs, ByAddress]:
        """The inputs of ``services``' labelled endpoints in ``index`` now, and the map."""
        at = self._at
        if at:
            last = at[0]
            if last[0] is services and last[1] is index and last[2] == index.revision:
                return last[3], last[4]
        parts: tuple[Service, ...] = services.parts  # type: ignore[assignment]
        labelled = LabelledEndpointsInputs(
            services, tuple(index.version(s.key) for s in parts), index
        )
        by_address = cache.value(labelled, functools.partial(labelled_endpoints, labelled))
        at[:] = [(services, index, index.revision, labelled, by_address)]
        return labelled, by_address


def _namespace_workloads(scope: ProxyScope, context: ScopeContext) -> NamespaceWorkloads:
    return NamespaceWorkloads()


def labelled_endpoints(inputs: LabelledEndpointsInputs) -> ByAddress:
    """The labelled endpoints of the namespace's services, by address (shared by every
    workload of the namespace until one of those services' endpoints changes)."""
    index = inputs.index
    services: tuple[Service, ...] = inputs.services.parts  # type: ignore[assignment]
    if tuple(index.version(s.key) for s in services) != inputs.versions:
        raise RuntimeError("endpoints moved past the versions asked for")
    by_address: dict[str, list[Candidate]] = {}
    position = 0
    for service in services:
        for endpoint in index.endpoints(service.key):
            if endpoint.labels:
                by_address.setdefault(endpoint.address, []).append((position, service, endpoint))
            position += 1
    return by_address
