"""A VirtualService's gateways exist (IST0101) and serve its hosts (IST0132)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    HOST_NOT_FOUND_IN_GATEWAY,
    REFERENCED_RESOURCE_NOT_FOUND,
    Message,
    about,
    did_you_mean,
)
from pilothouse.analysis.routes import MESH, gateway_names
from pilothouse.push.hostnames import host_matches


def analyze(view: MeshView) -> Iterator[Message]:
    gateways = {f"{g.namespace}/{g.name}": g for g in view.of_kind("Gateway")}
    for service in view.of_kind("VirtualService"):
        spec: Any = service.spec
        for index, name in enumerate(gateway_names(service)):
            if name == MESH:
                continue
            gateway = gateways.get(name)
            if gateway is None:
                namespace, _, plain = name.partition("/")
                siblings = [g.rpartition("/")[2] for g in gateways if g.startswith(namespace + "/")]
                close = [
                    f"{namespace}/{c}"
                    for c in difflib.get_close_matches(plain, siblings, n=1, cutoff=0.8)
                ]
                yield about(
                    service, REFERENCED_RESOURCE_NOT_FOUND, "gateway", name,
                    hint=did_you_mean(close), path=f"spec.gateways[{index}]",
                )  # fmt: skip
                continue
            served = _gateway_hosts(gateway)
            missing = [h for h in spec.hosts if not _served(h, served)]
            if missing:
                yield about(
                    service,
                    HOST_NOT_FOUND_IN_GATEWAY,
                    "[" + " ".join(missing) + "]",
                    f"{service.namespace}/{service.name}",
                    name,
                    path="spec.hosts",
                )


def _gateway_hosts(gateway: Any) -> list[str]:
    """The hosts a Gateway's servers admit (``namespace/`` prefixes dropped)."""
    return [host.rpartition("/")[2] for server in gateway.spec.servers for host in server.hosts]


def _served(host: str, served: list[str]) -> bool:
    return any(host_matches(pattern, host) or host_matches(host, pattern) for pattern in served)
