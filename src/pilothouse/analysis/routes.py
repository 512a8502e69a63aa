"""What a VirtualService refers to: its destinations (routes and mirrors) and gateways."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pilothouse.config.model import Config

MESH = "mesh"
"""The reserved gateway name of every sidecar."""


@dataclass(frozen=True, slots=True)
class Destination:
    """One destination as written: host, subset, port (0: none), and whether it is a
    mirror (traffic copied, not routed)."""

    host: str
    subset: str
    port: int
    mirror: bool


def destinations(virtual_service: Config) -> Iterator[Destination]:
    """Every destination of HTTP, TCP and TLS routes, and every HTTP mirror."""
    spec: Any = virtual_service.spec
    for http in spec.http:
        for weighted in http.route:
            yield _destination(weighted.destination, mirror=False)
        if http.HasField("mirror"):
            yield _destination(http.mirror, mirror=True)
        for policy in http.mirrors:
            yield _destination(policy.destination, mirror=True)
    for route in (*spec.tcp, *spec.tls):
        for weighted in route.route:
            yield _destination(weighted.destination, mirror=False)


def _destination(message: Any, *, mirror: bool) -> Destination:
    port = message.port.number if message.HasField("port") else 0
    return Destination(message.host, message.subset, port, mirror)


def gateway_names(virtual_service: Config) -> list[str]:
    """The gateways it is bound to, each as ``namespace/name`` (``mesh`` as is); none
    written means ``mesh``."""
    spec: Any = virtual_service.spec
    written = list(spec.gateways) or [MESH]
    return [qualified_gateway(name, virtual_service.namespace) for name in written]


def qualified_gateway(name: str, namespace: str) -> str:
    if name == MESH or "/" in name:
        return name
    return f"{namespace}/{name}"


def bound_to_mesh(virtual_service: Config) -> bool:
    return MESH in gateway_names(virtual_service)
