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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pilothouse.push.authorization import WorkloadAuthorization
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import Endpoint, Service
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.context_memo import context_memo

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
    """The inbound ports of the proxy's workload, once per context and proxy kind.

    Ports found through the workload's WorkloadEntry read the endpoint index, which
    changes without a new PushContext (the EDS fast path): they are kept with the
    index's revision and found again when it moved.
    """
    proxy = given.proxy
    key = (given.scope.key, proxy.ip_addresses, proxy.labels)
    known = context_memo(given.context).inbound_ports
    revision = given.endpoints.revision
    held = known.get(key)
    if held is not None and held[0] == revision:
        return held[1]
    ports = _compute(given)
    known[key] = (revision, ports)
    return ports


def inbound_mtls(given: GenerationInput, port: InboundPort) -> MtlsMode:
    """The mode the proxy's listener on ``port`` runs in: its workload's PeerAuthentication
    mode for the port (the policy found once per context, namespace and labels).

    Mutual TLS needs the workload certificate, which SDS gives only to a proxy whose
    stream proved its identity (``caller``). A PERMISSIVE port of a proxy without one
    accepts plaintext only (a mutual-TLS chain would wait for secrets that never come,
    and hold the listener back); STRICT stays STRICT and refuses everything until the
    proxy has a certificate, rather than fall back to plaintext.
    """
    proxy = given.proxy
    key = (proxy.namespace, proxy.labels)
    known = context_memo(given.context).mtls_policies
    policy = known.get(key)
    if policy is None:
        policy = known[key] = given.context.peer_authentications.workload_policy(*key)
    mode = policy.for_port(port.workload_port or port.port)
    if mode is MtlsMode.PERMISSIVE and proxy.caller is None:
        return MtlsMode.DISABLE
    return mode


def inbound_authorization(given: GenerationInput) -> WorkloadAuthorization:
    """The AuthorizationPolicies and RequestAuthentications of the proxy's workload."""
    proxy = given.proxy
    return given.context.authorizations.for_workload(proxy.namespace, proxy.labels)


def _compute(given: GenerationInput) -> tuple[InboundPort, ...]:
    proxy, context = given.proxy, given.context
    if proxy.is_router:
        return ()
    sidecar = None
    if given.scope.key.sidecar is not None:
        sidecar = context.sidecars.by_key.get(given.scope.key.sidecar)
    spec: Any = sidecar.spec if sidecar is not None else None
    if spec is not None and spec.ingress:
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
                    address=ingress.bind or proxy.ip or "0.0.0.0",
                    tls=ingress.tls if ingress.HasField("tls") else None,
                    workload_port=port,
                )
            )
        return tuple(ports)
    if not proxy.labels or not proxy.ip_addresses:
        return ()
    by_address = _labelled_endpoints(given, proxy.namespace)
    addresses = proxy.ip_addresses
    candidates: Iterable[Candidate]
    if len(addresses) == 1:
        candidates = by_address.get(addresses[0], ())  # already in position order
    else:
        candidates = sorted(
            (c for a in set(addresses) for c in by_address.get(a, ())), key=_position
        )
    found: dict[int, InboundPort] = {}
    for _, service, endpoint in candidates:
        if not proxy.labels.matches(endpoint.labels):
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
            address=proxy.ip,
            workload_port=endpoint.port or service_port.number,
        )
    return tuple(found[p] for p in sorted(found))


Candidate = tuple[int, Service, Endpoint]
"""(position in the namespace's service-then-endpoint order, service, endpoint)."""


def _position(candidate: Candidate) -> int:
    return candidate[0]


def _labelled_endpoints(given: GenerationInput, namespace: str) -> Mapping[str, list[Candidate]]:
    """The labelled endpoints of the namespace's services by address.

    Built once per context and namespace, and again only when the endpoints of one of
    those services changed (endpoints change without a new context).
    """
    index = given.endpoints
    known = context_memo(given.context).labelled_endpoints
    held = known.get(namespace)
    if held is not None and held.index is index and held.revision == index.revision:
        return held.by_address  # nothing in the index moved since: no version can have
    services = given.context.services.by_namespace.get(namespace, ())
    versions = tuple(index.version(s.key) for s in services)
    if held is None or held.versions != versions:
        by_address: dict[str, list[Candidate]] = {}
        position = 0
        for service in services:
            for endpoint in index.endpoints(service.key):
                if endpoint.labels:
                    by_address.setdefault(endpoint.address, []).append(
                        (position, service, endpoint)
                    )
                position += 1
        held = LabelledEndpoints(versions, by_address, index, index.revision)
    else:
        held = LabelledEndpoints(versions, held.by_address, index, index.revision)
    known[namespace] = held
    return held.by_address


@dataclass(frozen=True, slots=True)
class LabelledEndpoints:
    """A namespace's labelled endpoints by address, and the versions they were read at."""

    versions: tuple[int, ...]
    by_address: Mapping[str, list[Candidate]]
    index: EndpointIndex | None = None
    revision: int = -1
    """The index, and its revision, the versions were last found current at."""
