"""A VirtualService's destination hosts are services (IST0101, with a did-you-mean for a
misspelt one), its ports are theirs (IST0101 ``host:port``) or named where a service has
several (IST0112), and the hosts it routes for sidecars exist (PH0102)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    DESTINATION_PORT_SELECTOR_REQUIRED,
    REFERENCED_RESOURCE_NOT_FOUND,
    UNKNOWN_VIRTUAL_SERVICE_HOST,
    Message,
    about,
    did_you_mean,
)
from pilothouse.analysis.routes import bound_to_mesh, destinations


def analyze(view: MeshView) -> Iterator[Message]:
    for service in view.of_kind("VirtualService"):
        seen: set[tuple[str, int, bool]] = set()
        for destination in destinations(service):
            host = view.resolve(destination.host, service.namespace)
            if (host, destination.port, destination.mirror) in seen:
                continue
            seen.add((host, destination.port, destination.mirror))
            targets = view.services_for(host)
            reftype = "mirror host" if destination.mirror else "host"
            if not targets:
                hint = did_you_mean(view.close_hosts(host))
                yield about(
                    service, REFERENCED_RESOURCE_NOT_FOUND, reftype, host, hint=hint,
                    path=f"{destination.path}.host",
                )  # fmt: skip
                continue
            if len(targets) != 1 or targets[0].hostname != host:
                continue  # a wildcard on either side: its ports are not one service's
            ports = targets[0].ports
            if destination.port == 0 and len(ports) > 1:
                listed = "[" + " ".join(str(p) for p in ports) + "]"
                yield about(
                    service, DESTINATION_PORT_SELECTOR_REQUIRED, host, listed,
                    path=destination.path,
                )  # fmt: skip
            elif destination.port and ports and destination.port not in ports:
                yield about(
                    service, REFERENCED_RESOURCE_NOT_FOUND, "host:port",
                    f"{host}:{destination.port}", path=f"{destination.path}.port",
                )  # fmt: skip
        if bound_to_mesh(service):
            spec: Any = service.spec
            for index, written in enumerate(spec.hosts):
                host = view.resolve(written, service.namespace)
                if host.startswith("*") or view.services_for(host):
                    continue
                hint = did_you_mean(view.close_hosts(host))
                yield about(
                    service, UNKNOWN_VIRTUAL_SERVICE_HOST, host, hint=hint,
                    path=f"spec.hosts[{index}]",
                )  # fmt: skip
