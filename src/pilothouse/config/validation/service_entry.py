"""ServiceEntry: hosts, addresses, ports, and how resolution fits endpoints and selectors."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.service_entry_pb2 import ServiceEntry
from pilothouse.config.validation.addresses import check_ip_or_cidr
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.hosts import host_problem
from pilothouse.config.validation.labels import check_workload_selector
from pilothouse.config.validation.ports import (
    check_port_name,
    check_port_number,
    check_protocol,
    is_http,
    is_tls,
)
from pilothouse.config.validation.report import Report
from pilothouse.config.validation.visibility import check_export_to
from pilothouse.config.validation.workload_entry import check_workload_entry

_DNS_RESOLUTIONS = (ServiceEntry.DNS, ServiceEntry.DNS_ROUND_ROBIN)


def validate_service_entry(spec: ServiceEntry, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    _check_hosts(spec, report)
    for index, address in enumerate(spec.addresses):
        check_ip_or_cidr(address, f"spec.addresses[{index}]", report)
    if any("/" in address for address in spec.addresses) and spec.resolution not in (
        ServiceEntry.NONE,
        ServiceEntry.STATIC,
    ):
        report.error("spec.addresses", "CIDR addresses need resolution NONE or STATIC")
    port_names = _check_ports(spec, report)
    has_selector = spec.HasField("workload_selector")
    if has_selector:
        check_workload_selector(
            spec.workload_selector.labels, "spec.workloadSelector.labels", report
        )
        if spec.endpoints:
            report.error(
                "spec.workloadSelector", "workloadSelector and endpoints are mutually exclusive"
            )
    _check_resolution(spec, report, port_names, has_selector=has_selector)
    if spec.resolution != ServiceEntry.NONE and len(spec.hosts) > 1:
        for index, port in enumerate(spec.ports):
            if not (is_http(port.protocol) or is_tls(port.protocol)):
                report.error(
                    f"spec.ports[{index}].protocol",
                    "with several hosts every port must be HTTP-like or TLS-like (plain TCP "
                    "cannot tell the hosts apart) unless resolution is NONE",
                )
                break
    for index, name in enumerate(spec.subject_alt_names):
        if not name:
            report.error(f"spec.subjectAltNames[{index}]", "subject alt name must not be empty")
    check_export_to(spec.export_to, "spec.exportTo", report, allow_none=True)


def _check_hosts(spec: ServiceEntry, report: Report) -> None:
    if not spec.hosts:
        report.error("spec.hosts", "a ServiceEntry needs at least one host")
    for index, host in enumerate(spec.hosts):
        path = f"spec.hosts[{index}]"
        if host == "*":
            report.error(path, "the bare wildcard host '*' is not allowed in a ServiceEntry")
            continue
        problem = host_problem(host)
        if problem is not None:
            report.error(path, f"{problem}; put IP addresses in addresses or endpoints")


def _check_ports(spec: ServiceEntry, report: Report) -> set[str]:
    names: dict[str, int] = {}
    numbers: dict[int, int] = {}
    for index, port in enumerate(spec.ports):
        path = f"spec.ports[{index}]"
        check_port_number(port.number, f"{path}.number", report)
        check_port_name(port.name, f"{path}.name", report, required=True)
        check_protocol(port.protocol, f"{path}.protocol", report, required=False)
        if port.name in names:
            report.error(
                f"{path}.name",
                f"port name {port.name!r} is already used by ports[{names[port.name]}]",
            )
        elif port.name:
            names[port.name] = index
        if port.number in numbers:
            report.error(
                f"{path}.number",
                f"port {port.number} is already used by ports[{numbers[port.number]}]",
            )
        else:
            numbers[port.number] = index
        if port.target_port:
            check_port_number(port.target_port, f"{path}.targetPort", report)
            if spec.resolution == ServiceEntry.NONE:
                report.warn(f"{path}.targetPort", "targetPort has no effect with resolution NONE")
    return set(names)


def _check_resolution(
    spec: ServiceEntry, report: Report, port_names: set[str], *, has_selector: bool
) -> None:
    resolution = spec.resolution
    if resolution == ServiceEntry.NONE:
        if spec.endpoints:
            report.error("spec.endpoints", "resolution NONE takes no endpoints")
        if has_selector:
            report.warn(
                "spec.workloadSelector", "workloadSelector has no effect with resolution NONE"
            )
    elif resolution == ServiceEntry.STATIC:
        if not spec.endpoints and not has_selector:
            report.error(
                "spec.endpoints", "resolution STATIC needs endpoints or a workloadSelector"
            )
        for index, endpoint in enumerate(spec.endpoints):
            check_workload_entry(
                endpoint,
                f"spec.endpoints[{index}]",
                report,
                service_ports=port_names,
                allow_hostname=False,
            )
    elif resolution in _DNS_RESOLUTIONS:
        mode = ServiceEntry.Resolution.Name(resolution)
        if not spec.endpoints:
            for index, host in enumerate(spec.hosts):
                if host.startswith("*"):
                    report.error(
                        f"spec.hosts[{index}]",
                        f"resolution {mode} without endpoints resolves the hosts, so they cannot "
                        "be wildcards",
                    )
        if resolution == ServiceEntry.DNS_ROUND_ROBIN and len(spec.endpoints) > 1:
            report.error("spec.endpoints", "resolution DNS_ROUND_ROBIN allows at most one endpoint")
        if has_selector:
            report.warn(
                "spec.workloadSelector", f"workloadSelector has no effect with resolution {mode}"
            )
        for index, endpoint in enumerate(spec.endpoints):
            check_workload_entry(
                endpoint,
                f"spec.endpoints[{index}]",
                report,
                service_ports=port_names,
                allow_unix=False,
            )
    elif resolution == ServiceEntry.DYNAMIC_DNS:
        if spec.endpoints:
            report.error("spec.endpoints", "resolution DYNAMIC_DNS takes no endpoints")
        if has_selector:
            report.error(
                "spec.workloadSelector", "resolution DYNAMIC_DNS takes no workloadSelector"
            )
