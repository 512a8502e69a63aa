"""Workload selectors select something (IST0127) for Sidecars, AuthorizationPolicies,
PeerAuthentications, RequestAuthentications, WasmPlugins and EnvoyFilters (Telemetry's
are :mod:`.telemetry_selectors`, with Istio's own codes); one namespace has at most one Sidecar
without a selector (IST0111) and no workload is selected by two Sidecars (IST0110).

A selector in the root namespace may select workloads of any namespace; elsewhere only
its own. Selectors are judged only when the config set holds workloads at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    CONFLICTING_SIDECAR_WORKLOAD_SELECTORS,
    MULTIPLE_SIDECARS_WITHOUT_WORKLOAD_SELECTORS,
    NO_MATCHING_WORKLOADS_FOUND,
    Message,
    about,
    labels_text,
)
from pilothouse.config.model import Config

SELECTING_KINDS = (
    "AuthorizationPolicy",
    "PeerAuthentication",
    "RequestAuthentication",
    "Sidecar",
    "WasmPlugin",
    "EnvoyFilter",
)
WORKLOAD_SELECTOR_KINDS = frozenset({"Sidecar", "EnvoyFilter"})
"""The kinds whose selector is ``workloadSelector.labels`` (others: ``selector.matchLabels``)."""


def selector_of(config: Config) -> Mapping[str, str]:
    """The labels a config's workload selector names (empty: it has none)."""
    spec: Any = config.spec
    if config.kind in WORKLOAD_SELECTOR_KINDS:
        return dict(spec.workload_selector.labels) if spec.HasField("workload_selector") else {}
    return dict(spec.selector.match_labels) if spec.HasField("selector") else {}


def analyze(view: MeshView) -> Iterator[Message]:
    if view.workloads:
        for kind in SELECTING_KINDS:
            for config in view.of_kind(kind):
                selector = selector_of(config)
                if not selector:
                    continue
                namespace = (
                    None if config.namespace == view.mesh.root_namespace else config.namespace
                )
                if not view.workloads_in(namespace, selector):
                    path = (
                        "spec.workloadSelector"
                        if kind in WORKLOAD_SELECTOR_KINDS
                        else "spec.selector"
                    )
                    yield about(
                        config, NO_MATCHING_WORKLOADS_FOUND, labels_text(selector), path=path
                    )
    yield from _sidecar_conflicts(view)


def _sidecar_conflicts(view: MeshView) -> Iterator[Message]:
    by_namespace: dict[str, list[Config]] = {}
    for sidecar in view.of_kind("Sidecar"):
        by_namespace.setdefault(sidecar.namespace, []).append(sidecar)
    for namespace, sidecars in sorted(by_namespace.items()):
        bare = [s for s in sidecars if not selector_of(s)]
        if len(bare) > 1:
            names = "[" + " ".join(s.name for s in bare) + "]"
            for sidecar in bare:
                yield about(sidecar, MULTIPLE_SIDECARS_WITHOUT_WORKLOAD_SELECTORS, names, namespace)
        selecting = [s for s in sidecars if selector_of(s)]
        for workload in view.workloads_in(namespace, {}):
            chosen = [s for s in selecting if workload.carries(selector_of(s))]
            if len(chosen) > 1:
                names = "[" + " ".join(s.name for s in chosen) + "]"
                for sidecar in chosen:
                    yield about(
                        sidecar, CONFLICTING_SIDECAR_WORKLOAD_SELECTORS, names, namespace,
                        workload.name,
                    )  # fmt: skip
