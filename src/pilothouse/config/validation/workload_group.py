"""WorkloadGroup: the template for auto-registered WorkloadEntries, and its readiness probe."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.workload_group_pb2 import (
    ReadinessProbe,
    WorkloadGroup,
)
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.headers import header_name_problem
from pilothouse.config.validation.labels import check_labels
from pilothouse.config.validation.ports import check_port_number
from pilothouse.config.validation.report import Report
from pilothouse.config.validation.workload_entry import check_workload_entry

_PROBE_COUNTERS = (
    ("initial_delay_seconds", "initialDelaySeconds"),
    ("timeout_seconds", "timeoutSeconds"),
    ("period_seconds", "periodSeconds"),
    ("success_threshold", "successThreshold"),
    ("failure_threshold", "failureThreshold"),
)


def validate_workload_group(spec: WorkloadGroup, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    if spec.HasField("metadata"):
        check_labels(spec.metadata.labels, "spec.metadata.labels", report)
    if not spec.HasField("template"):
        report.error("spec.template", "template is required")
    else:
        _check_template(spec, report)
    if spec.HasField("probe"):
        _check_probe(spec.probe, "spec.probe", report)


def _check_template(spec: WorkloadGroup, report: Report) -> None:
    if spec.template.address:
        report.warn(
            "spec.template.address",
            "address is ignored in a template: each registering workload brings its own",
        )
    check_workload_entry(spec.template, "spec.template", report, check_address=False)


def _check_probe(probe: ReadinessProbe, path: str, report: Report) -> None:
    for field, json_name in _PROBE_COUNTERS:
        value = getattr(probe, field)
        if value < 0:
            report.error(f"{path}.{json_name}", f"{json_name} {value} must not be negative")
    method = probe.WhichOneof("health_check_method")
    if method is None:
        report.error(
            path, "a probe needs one health check method: httpGet, tcpSocket, exec or grpc"
        )
    elif method == "http_get":
        http_get = probe.http_get
        check_port_number(http_get.port, f"{path}.httpGet.port", report)
        if http_get.scheme and http_get.scheme.upper() not in ("HTTP", "HTTPS"):
            report.error(
                f"{path}.httpGet.scheme",
                f"scheme {http_get.scheme!r} must be HTTP or HTTPS",
            )
        for index, header in enumerate(http_get.http_headers):
            problem = header_name_problem(header.name)
            if problem is not None:
                report.error(f"{path}.httpGet.httpHeaders[{index}].name", problem)
    elif method == "tcp_socket":
        check_port_number(probe.tcp_socket.port, f"{path}.tcpSocket.port", report)
    elif method == "exec":
        if not probe.exec.command:
            report.error(f"{path}.exec.command", "exec probe needs a command")
    else:
        check_port_number(probe.grpc.port, f"{path}.grpc.port", report)
