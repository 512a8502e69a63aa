"""Where a headless service's TCP ports listen: at each of its endpoints' addresses.

A service without an address whose endpoints Envoy reaches by original destination
(resolution NONE: a Kubernetes Service with ``clusterIP: None``, a ServiceEntry with
resolution NONE and no address) has no address of its own to listen on. istiod gives
each of its non-HTTP ports (TCP, TLS, MongoDB, ...; also those whose protocol it
sniffs, which pilothouse does not: a port without a declared protocol gets no listener
here, as everywhere) one outbound listener per endpoint address, ``<podIP>_<port>``,
so that a connection to a pod's IP matches that pod's service cluster
(``outbound|port||host``) and two headless services can share a port; HTTP ports keep
the shared ``0.0.0.0_<port>`` (their virtual hosts tell the services apart). Endpoint
addresses that are not IP addresses are left out, and so is the proxy's own address
(its own traffic to itself never leaves it: its inbound listener holds that address).
Only a ServiceEntry host without a workloadSelector and without endpoints on the port
keeps the shared ``0.0.0.0_<port>``; any other such port (a Kubernetes Service's, a
selecting ServiceEntry's, or one whose endpoints were all left out) gets no listener,
as in istiod.

The addresses are an input of the scope's listeners (:class:`HeadlessPort` tuples in
``ListenerInputs``): listeners built for one set of pods are never served for another.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from pilothouse.config.validation.addresses import is_ip
from pilothouse.config.validation.ports import is_http
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.registry.model import SERVICE_KIND
from pilothouse.xds.generators.scope_inputs import ScopeInputs

NO_LISTENER: Final = frozenset({"", "UDP"})
"""Service port protocols (upper case) no outbound listener is built for: undeclared
(pilothouse does not sniff), UDP (istiod's outbound listeners are TCP)."""


class HeadlessPort(NamedTuple):
    """The endpoint addresses (sorted, each once) of one non-HTTP port of a headless
    service."""

    hostname: str
    port: int
    addresses: tuple[str, ...]


def headless_ports(
    scope: ScopeInputs, endpoints: EndpointIndex, own_address: str
) -> tuple[HeadlessPort, ...]:
    """Every TCP port (neither HTTP, UDP nor undeclared) of the scope's headless services,
    with its endpoint addresses but ``own_address`` (none: no listener on the port); a
    port that keeps the shared wildcard listener instead is left out."""
    found: list[HeadlessPort] = []
    for service in scope.headless_services:
        held = endpoints.endpoints(service.key)
        # a ServiceEntry host without a selector: no endpoint is the wildcard listener
        wildcard = service.source.kind != SERVICE_KIND and service.workload_selector is None
        for port in service.ports:
            if port.protocol.upper() in NO_LISTENER or is_http(port.protocol):
                continue
            on_port = {e.address for e in held if e.service_port_name == port.name}
            if wildcard and not on_port:
                continue
            addresses = sorted(a for a in on_port if a != own_address and is_ip(a))
            found.append(HeadlessPort(service.hostname, port.number, tuple(addresses)))
    return tuple(found)
