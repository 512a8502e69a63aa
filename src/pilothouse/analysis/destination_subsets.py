"""A VirtualService's subsets are defined by a DestinationRule for their host (IST0101
``host+subset in destinationrule``, with a did-you-mean among the host's subsets)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    REFERENCED_RESOURCE_NOT_FOUND,
    Message,
    about,
    did_you_mean,
)
from pilothouse.analysis.routes import destinations
from pilothouse.push.hostnames import host_matches


def analyze(view: MeshView) -> Iterator[Message]:
    subsets: dict[str, set[str]] = {}
    for rule in view.of_kind("DestinationRule"):
        spec: Any = rule.spec
        host = view.resolve(spec.host, rule.namespace)
        subsets.setdefault(host, set()).update(s.name for s in spec.subsets)
    wildcards = [pattern for pattern in subsets if pattern.startswith("*")]
    for service in view.of_kind("VirtualService"):
        seen: set[tuple[str, str, bool]] = set()
        for destination in destinations(service):
            if not destination.subset:
                continue
            host = view.resolve(destination.host, service.namespace)
            if (host, destination.subset, destination.mirror) in seen:
                continue
            seen.add((host, destination.subset, destination.mirror))
            defined = set(subsets.get(host, ()))
            for pattern in wildcards:
                if host_matches(pattern, host):
                    defined |= subsets[pattern]
            if destination.subset in defined:
                continue
            close = difflib.get_close_matches(destination.subset, sorted(defined), n=1)
            reftype = "mirror+subset" if destination.mirror else "host+subset"
            yield about(
                service,
                REFERENCED_RESOURCE_NOT_FOUND,
                f"{reftype} in destinationrule",
                f"{host}+{destination.subset}",
                hint=did_you_mean(close),
                path=f"{destination.path}.subset",
            )
