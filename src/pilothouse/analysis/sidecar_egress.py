"""A Sidecar's egress hosts (``namespace/host``) name namespaces that exist (IST0101
``namespace``) and, when not wildcards, hosts of services there (PH0103, with a
did-you-mean)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    REFERENCED_RESOURCE_NOT_FOUND,
    UNKNOWN_SIDECAR_EGRESS_HOST,
    Message,
    about,
    did_you_mean,
)

ANY_NAMESPACE = frozenset({"*", ".", "~"})


def analyze(view: MeshView) -> Iterator[Message]:
    for sidecar in view.of_kind("Sidecar"):
        spec: Any = sidecar.spec
        seen: set[str] = set()
        for i, listener in enumerate(spec.egress):
            for j, written in enumerate(listener.hosts):
                path = f"spec.egress[{i}].hosts[{j}]"
                if written in seen:
                    continue
                seen.add(written)
                namespace, _, host = written.rpartition("/")
                if namespace not in ANY_NAMESPACE and namespace not in view.namespaces:
                    yield about(
                        sidecar, REFERENCED_RESOURCE_NOT_FOUND, "namespace", namespace, path=path
                    )
                    continue
                if not host or host.startswith("*") or namespace == "~":
                    continue
                where = {".": sidecar.namespace}.get(namespace, namespace)
                services = [
                    s for s in view.services_for(host) if where == "*" or s.namespace == where
                ]
                if not services:
                    hint = did_you_mean(view.close_hosts(host))
                    yield about(sidecar, UNKNOWN_SIDECAR_EGRESS_HOST, written, hint=hint, path=path)
