"""PeerAuthentication: mTLS mode per workload selector and per port."""

from __future__ import annotations

from pilothouse.api.istio.security.v1beta1.peer_authentication_pb2 import PeerAuthentication
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.labels import check_workload_selector
from pilothouse.config.validation.ports import MAX_PORT
from pilothouse.config.validation.report import Report


def validate_peer_authentication(spec: PeerAuthentication, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    has_selector = spec.HasField("selector")
    if has_selector:
        check_workload_selector(spec.selector.match_labels, "spec.selector.matchLabels", report)
    if spec.port_level_mtls and not (has_selector and spec.selector.match_labels):
        report.error(
            "spec.portLevelMtls",
            "portLevelMtls needs a selector with labels: mesh-wide and namespace-wide policies "
            "cannot set per-port modes",
        )
    for port in sorted(spec.port_level_mtls):
        if not 1 <= port <= MAX_PORT:
            report.error(f"spec.portLevelMtls[{port}]", f"port {port} must be in 1..{MAX_PORT}")
