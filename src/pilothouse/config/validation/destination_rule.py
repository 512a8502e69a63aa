"""DestinationRule: host, subsets, traffic policies, exportTo and workload selector."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.destination_rule_pb2 import DestinationRule
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.hosts import check_host, is_dns_label
from pilothouse.config.validation.labels import check_labels, check_workload_selector
from pilothouse.config.validation.report import Report
from pilothouse.config.validation.traffic_policy import check_traffic_policy
from pilothouse.config.validation.visibility import check_export_to


def validate_destination_rule(spec: DestinationRule, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    if not spec.host:
        report.error("spec.host", "host is required")
    else:
        check_host(spec.host, "spec.host", report)
    if spec.HasField("traffic_policy"):
        check_traffic_policy(spec.traffic_policy, "spec.trafficPolicy", report)
    first_index: dict[str, int] = {}
    for index, subset in enumerate(spec.subsets):
        item = f"spec.subsets[{index}]"
        if not subset.name:
            report.error(f"{item}.name", "subset name is required")
        elif not is_dns_label(subset.name):
            report.error(f"{item}.name", f"subset name {subset.name!r} is not a DNS-1123 label")
        elif subset.name in first_index:
            report.error(
                f"{item}.name",
                f"subset name {subset.name!r} is already used by "
                f"subsets[{first_index[subset.name]}]",
            )
        else:
            first_index[subset.name] = index
        check_labels(subset.labels, f"{item}.labels", report)
        if subset.HasField("traffic_policy"):
            check_traffic_policy(subset.traffic_policy, f"{item}.trafficPolicy", report)
    has_selector = spec.HasField("workload_selector")
    check_export_to(spec.export_to, "spec.exportTo", report, selector_scoped=has_selector)
    if has_selector:
        check_workload_selector(
            spec.workload_selector.match_labels, "spec.workloadSelector.matchLabels", report
        )
