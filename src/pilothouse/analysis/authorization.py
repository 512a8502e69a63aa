"""An AuthorizationPolicy's source namespaces exist (IST0101 ``namespace``), and its
rules on peer identity (principals, namespaces) can match: without mutual TLS a peer has
no identity, so a rule naming one never matches when the workloads it selects have
their PeerAuthentication at DISABLE (IST0167)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    INEFFECTIVE_POLICY,
    REFERENCED_RESOURCE_NOT_FOUND,
    Message,
    about,
)
from pilothouse.analysis.peer_authentication import DISABLE, deciding
from pilothouse.analysis.selectors import selector_of
from pilothouse.config.model import Config

IDENTITY_FIELDS = ("principals", "not_principals", "namespaces", "not_namespaces")


def _snake(field: str) -> str:
    return "not_namespaces" if field == "notNamespaces" else field


def analyze(view: MeshView) -> Iterator[Message]:
    for policy in view.of_kind("AuthorizationPolicy"):
        spec: Any = policy.spec
        named: dict[str, str] = {}
        uses_identity = False
        for i, rule in enumerate(spec.rules):
            for j, source in enumerate(getattr(rule, "from")):
                written = source.source
                where = f"spec.rules[{i}].from[{j}].source"
                for field in ("namespaces", "notNamespaces"):
                    for k, namespace in enumerate(getattr(written, _snake(field))):
                        named.setdefault(namespace, f"{where}.{field}[{k}]")
                uses_identity |= any(len(getattr(written, f)) for f in IDENTITY_FIELDS)
        for namespace, path in sorted(named.items()):
            if "*" not in namespace and namespace not in view.namespaces:
                yield about(
                    policy, REFERENCED_RESOURCE_NOT_FOUND, "namespace", namespace, path=path
                )
        if uses_identity:
            yield from _without_mtls(view, policy)


def _without_mtls(view: MeshView, policy: Config) -> Iterator[Message]:
    root = policy.namespace == view.mesh.root_namespace
    selected = view.workloads_in(None if root else policy.namespace, selector_of(policy))
    for workload in selected:
        decided = deciding(view, workload)
        if decided is not None and decided[1] == DISABLE:
            authn = decided[0]
            yield about(
                policy,
                INEFFECTIVE_POLICY,
                f"its rules name peer principals or namespaces, but PeerAuthentication"
                f" {authn.namespace}/{authn.name} disables mutual TLS for {workload.name},"
                " so no peer has an identity to match",
            )
            return
