"""No two VirtualServices bound to sidecars (the ``mesh`` gateway) define one host
(IST0109): istiod keeps one of them and the other's routes are lost. Two in different
namespaces conflict only where both are seen, that is when both are exported to every
namespace (the default)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    CONFLICTING_MESH_GATEWAY_VIRTUAL_SERVICE_HOSTS,
    Message,
    about,
)
from pilothouse.analysis.routes import bound_to_mesh
from pilothouse.config.model import Config


def analyze(view: MeshView) -> Iterator[Message]:
    by_host: dict[str, list[Config]] = {}
    for service in view.of_kind("VirtualService"):
        if not bound_to_mesh(service):
            continue
        spec: Any = service.spec
        for written in dict.fromkeys(spec.hosts):
            host = view.resolve(written, service.namespace)
            if service not in by_host.setdefault(host, []):
                by_host[host].append(service)
    for host, services in sorted(by_host.items()):
        for service in services:
            rivals = [s for s in services if _seen_together(service, s)]
            if len(rivals) < 2:
                continue
            names = ",".join(f"{s.namespace}/{s.name}" for s in rivals)
            yield about(
                service, CONFLICTING_MESH_GATEWAY_VIRTUAL_SERVICE_HOSTS, names, host,
                path="spec.hosts",
            )  # fmt: skip


def _seen_together(one: Config, other: Config) -> bool:
    if one.namespace == other.namespace:
        return True
    return _exported_everywhere(one) and _exported_everywhere(other)


def _exported_everywhere(service: Config) -> bool:
    export: Any = service.spec
    return not export.export_to or "*" in export.export_to
