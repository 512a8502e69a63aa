"""Which PeerAuthentication decides a workload's mutual TLS, as istiod resolves it: one
selecting the workload in its namespace, else the namespace's own (no selector), else
the mesh's (no selector, in the root namespace). Port-level modes are not read here."""

from __future__ import annotations

from typing import Any

from pilothouse.analysis.mesh_view import MeshView, Workload
from pilothouse.config.model import Config

UNSET, DISABLE, PERMISSIVE, STRICT = 0, 1, 2, 3
MODE_NAMES = {UNSET: "UNSET", DISABLE: "DISABLE", PERMISSIVE: "PERMISSIVE", STRICT: "STRICT"}


def deciding(view: MeshView, workload: Workload) -> tuple[Config, int] | None:
    """The policy and the mode (UNSET ones inherit) that apply to ``workload``; None
    when none says anything (PERMISSIVE, istiod's default)."""
    policies = view.of_kind("PeerAuthentication")
    own = [p for p in policies if p.namespace == workload.namespace]
    root = [p for p in policies if p.namespace == view.mesh.root_namespace]
    tiers = (
        [p for p in own if _selector(p) and workload.carries(_selector(p))],
        [p for p in own if not _selector(p)],
        [p for p in root if not _selector(p)],
    )
    for tier in tiers:
        for policy in sorted(tier, key=lambda p: p.name):
            mode = _mode(policy)
            if mode != UNSET:
                return policy, mode
    return None


def _selector(policy: Config) -> dict[str, str]:
    spec: Any = policy.spec
    return dict(spec.selector.match_labels) if spec.HasField("selector") else {}


def _mode(policy: Config) -> int:
    spec: Any = policy.spec
    return int(spec.mtls.mode) if spec.HasField("mtls") else UNSET
