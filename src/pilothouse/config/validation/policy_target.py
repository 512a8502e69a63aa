"""Where a security policy applies: a workload selector or target references, never both."""

from __future__ import annotations

from collections.abc import Sequence

from pilothouse.api.istio.type.v1beta1.selector_pb2 import (
    PolicyTargetReference,
    WorkloadSelector,
)
from pilothouse.config.validation.labels import check_workload_selector
from pilothouse.config.validation.report import Report

# Kinds a policy may be attached to, with the API group each belongs to.
TARGET_KINDS = {
    "Gateway": "gateway.networking.k8s.io",
    "GatewayClass": "gateway.networking.k8s.io",
    "Service": "",
    "ServiceEntry": "networking.istio.io",
}


def check_policy_target(
    selector: WorkloadSelector | None,
    target_ref: PolicyTargetReference | None,
    target_refs: Sequence[PolicyTargetReference],
    report: Report,
) -> None:
    """``selector`` / ``targetRef`` / ``targetRefs``: at most one way to pick what is governed."""
    if selector is not None:
        check_workload_selector(selector.match_labels, "spec.selector.matchLabels", report)
        if target_ref is not None or target_refs:
            report.error(
                "spec.selector", "only one of selector, targetRef or targetRefs may be set"
            )
    if target_ref is not None and target_refs:
        report.error("spec.targetRef", "targetRef and targetRefs cannot both be set")
    refs = [("spec.targetRef", target_ref)] if target_ref is not None else []
    refs += [(f"spec.targetRefs[{i}]", ref) for i, ref in enumerate(target_refs)]
    for path, ref in refs:
        _check_reference(ref, path, report)


def _check_reference(ref: PolicyTargetReference, path: str, report: Report) -> None:
    if not ref.name:
        report.error(f"{path}.name", "name is required")
    group = TARGET_KINDS.get(ref.kind)
    if group is None:
        known = ", ".join(sorted(TARGET_KINDS))
        report.error(f"{path}.kind", f"kind {ref.kind!r} cannot be targeted (one of: {known})")
    elif ref.group != group:
        report.error(f"{path}.group", f"group of kind {ref.kind} must be {group!r}")
    if ref.namespace and ref.namespace != report.namespace:
        report.error(
            f"{path}.namespace",
            f"cross-namespace targets are not supported (policy is in {report.namespace!r})",
        )
