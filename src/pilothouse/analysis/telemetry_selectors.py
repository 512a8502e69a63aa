"""Telemetry selectors select a workload (IST0101, as Istio's telemetry.SelectorAnalyzer
reports it), no workload is selected by two Telemetries (IST0159), and one namespace has
at most one Telemetry without a selector (IST0160).

As for the other selectors, a Telemetry in the root namespace may select workloads of any
namespace, and selectors are judged only when the config set holds workloads at all.
A Telemetry that names ``targetRefs`` instead of a selector is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import (
    CONFLICTING_TELEMETRY_WORKLOAD_SELECTORS,
    MULTIPLE_TELEMETRIES_WITHOUT_WORKLOAD_SELECTORS,
    REFERENCED_RESOURCE_NOT_FOUND,
    Message,
    about,
    labels_text,
)
from pilothouse.config.model import Config


def selector_of(config: Config) -> Mapping[str, str]:
    spec: Any = config.spec
    return dict(spec.selector.match_labels) if spec.HasField("selector") else {}


def targets(config: Config) -> bool:
    spec: Any = config.spec
    return spec.HasField("targetRef") or len(spec.targetRefs) > 0


def analyze(view: MeshView) -> Iterator[Message]:
    telemetries = view.of_kind("Telemetry")
    by_workload: dict[str, list[Config]] = {}
    for config in telemetries:
        selector = selector_of(config)
        if not selector or not view.workloads:
            continue
        root = config.namespace == view.mesh.root_namespace
        selected = view.workloads_in(None if root else config.namespace, selector)
        if not selected:
            yield about(
                config, REFERENCED_RESOURCE_NOT_FOUND, "selector", labels_text(selector),
                path="spec.selector",
            )  # fmt: skip
        for workload in selected:
            by_workload.setdefault(workload.name, []).append(config)
    for name, chosen in sorted(by_workload.items()):
        if len(chosen) > 1:
            names = "[" + " ".join(c.name for c in chosen) + "]"
            namespace, _, pod = name.rpartition("/")
            for config in chosen:
                yield about(config, CONFLICTING_TELEMETRY_WORKLOAD_SELECTORS, names, namespace, pod)
    bare: dict[str, list[Config]] = {}
    for config in telemetries:
        if not selector_of(config) and not targets(config):
            bare.setdefault(config.namespace, []).append(config)
    for namespace, found in sorted(bare.items()):
        if len(found) > 1:
            names = "[" + " ".join(c.name for c in found) + "]"
            for config in found:
                yield about(
                    config, MULTIPLE_TELEMETRIES_WITHOUT_WORKLOAD_SELECTORS, names, namespace
                )
