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
    path: str
    """Where it is written (``spec.http[0].route[1].destination``)."""


def destinations(virtual_service: Config) -> Iterator[Destination]:
    """Every destination of HTTP, TCP and TLS routes, and every HTTP mirror."""
    spec: Any = virtual_service.spec
    for i, http in enumerate(spec.http):
        for j, weighted in enumerate(http.route):
            yield _destination(weighted.destination, f"spec.http[{i}].route[{j}].destination")
        if http.HasField("mirror"):
            yield _destination(http.mirror, f"spec.http[{i}].mirror", mirror=True)
        for j, policy in enumerate(http.mirrors):
            path = f"spec.http[{i}].mirrors[{j}].destination"
            yield _destination(policy.destination, path, mirror=True)
    for kind in ("tcp", "tls"):
        for i, route in enumerate(getattr(spec, kind)):
            for j, weighted in enumerate(route.route):
                path = f"spec.{kind}[{i}].route[{j}].destination"
                yield _destination(weighted.destination, path)


def _destination(message: Any, path: str, *, mirror: bool = False) -> Destination:
    port = message.port.number if message.HasField("port") else 0
    return Destination(message.host, message.subset, port, mirror, path)


def gateway_names(virtual_service: Config) -> list[str]:
    """The gateways it is bound to, each as ``namespace/name`` (``mesh`` as is), in the
    order written; none written means ``mesh``."""
    spec: Any = virtual_service.spec
    written = list(spec.gateways) or [MESH]
    return [qualified_gateway(name, virtual_service.namespace) for name in written]


def qualified_gateway(name: str, namespace: str) -> str:
    if name == MESH or "/" in name:
        return name
    return f"{namespace}/{name}"


def bound_to_mesh(virtual_service: Config) -> bool:
    return MESH in gateway_names(virtual_service)
