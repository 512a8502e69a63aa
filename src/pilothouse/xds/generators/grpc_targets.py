"""The names a proxyless gRPC process asks LDS for: client targets and server listeners.

A client dialing ``xds:///greeter.default.svc.cluster.local:50051`` asks for the
listener named exactly ``greeter.default.svc.cluster.local:50051`` (the target's
authority). :func:`resolve_target` finds the service and port such a name means for
a proxy of one scope, accepting the short forms Istio accepts for a proxy in
namespace ``ns`` (with the mesh's domain suffix):

- ``greeter:50051`` → ``greeter.ns.svc.<suffix>`` (the proxy's own namespace);
- ``greeter.other:50051`` → ``greeter.other.svc.<suffix>``;
- ``greeter.other.svc:50051`` → ``greeter.other.svc.<suffix>``;
- any other host as written (``api.example.com:443``).

Without ``:port`` the name resolves only when the service has exactly one port.
The listener (and its route configuration) keep the name as requested, since the
client matches virtual hosts against the authority it dialed.

A server started with ``xds=True`` asks for its bootstrap's
``server_listener_resource_name_template`` with ``ip:port`` filled in;
:func:`parse_server_listener_name` recognises Istio's template
(``xds.istio.io/grpc/lds/inbound/%s``) and gRPC's own example one
(``grpc/server?xds.resource.listening_address=%s``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from pilothouse.registry.model import Service, ServicePort

SERVER_LISTENER_PREFIXES: Final = (
    "xds.istio.io/grpc/lds/inbound/",
    "grpc/server?xds.resource.listening_address=",
)


@dataclass(frozen=True, slots=True)
class GrpcTarget:
    """What a client listener name means: ``name`` as requested, the service and port."""

    name: str
    service: Service
    port: ServicePort


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """The address an xDS-enabled gRPC server listens on (from its listener name)."""

    name: str
    address: str
    port: int


def split_authority(name: str) -> tuple[str, int | None]:
    """``host:port`` → (host, port); a name without a numeric port → (name, None)."""
    host, colon, port = name.rpartition(":")
    if colon and host and port.isdigit() and not host.endswith(":"):
        number = int(port)
        if 0 < number < 65536:
            return host.strip("[]"), number
    return name, None


def candidate_hosts(host: str, namespace: str, domain_suffix: str) -> list[str]:
    """The service hostnames ``host`` may stand for, most literal first."""
    candidates = [host]
    labels = host.split(".")
    if len(labels) == 1:
        candidates.append(f"{host}.{namespace}.svc.{domain_suffix}")
    elif len(labels) == 2:
        candidates.append(f"{host}.svc.{domain_suffix}")
    elif len(labels) == 3 and labels[2] == "svc":
        candidates.append(f"{host}.{domain_suffix}")
    return candidates


def resolve_target(
    name: str, by_hostname: Mapping[str, Service], namespace: str, domain_suffix: str
) -> GrpcTarget | None:
    """The service port a client listener ``name`` means to a proxy of ``namespace`` that
    sees the services ``by_hostname``, or None."""
    host, number = split_authority(name)
    if not host:
        return None
    for hostname in candidate_hosts(host, namespace, domain_suffix):
        service = by_hostname.get(hostname)
        if service is None:
            continue
        if number is None:
            if len(service.ports) != 1:
                return None
            return GrpcTarget(name, service, service.ports[0])
        port = service.port_by_number(number)
        if port is None:
            return None
        return GrpcTarget(name, service, port)
    return None


def parse_server_listener_name(name: str) -> ServerAddress | None:
    """The ``ip:port`` inside a server listener name, or None for any other name."""
    for prefix in SERVER_LISTENER_PREFIXES:
        if name.startswith(prefix):
            host, port = split_authority(name[len(prefix) :])
            if port is None:
                return None
            try:
                address = str(ipaddress.ip_address(host))
            except ValueError:
                return None
            return ServerAddress(name, address, port)
    return None
