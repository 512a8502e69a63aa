"""ServiceEntry: hosts, addresses, ports, and how resolution fits endpoints and selectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    port_name_ok,
    port_number_ok,
    protocol_ok,
)
from pilothouse.config.validation.report import Report
from pilothouse.config.validation.visibility import check_export_to
from pilothouse.config.validation.workload_entry import check_workload_entry

_DNS_RESOLUTIONS = (ServiceEntry.DNS, ServiceEntry.DNS_ROUND_ROBIN)


def validate_service_entry(spec: ServiceEntry, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    hosts = spec.hosts
    _check_hosts(hosts, report)
    resolution = spec.resolution
    addresses = spec.addresses
    if addresses:
        _check_addresses(addresses, resolution, report)
    ports = spec.ports
    port_names = _check_ports(ports, resolution, report)
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
    if resolution != ServiceEntry.NONE and len(hosts) > 1:
        for index, port in enumerate(ports):
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
    export_to = spec.export_to
    if export_to:
        check_export_to(export_to, "spec.exportTo", report, allow_none=True)


def _check_hosts(hosts: Sequence[str], report: Report) -> None:
    if not hosts:
        report.error("spec.hosts", "a ServiceEntry needs at least one host")
    for index, host in enumerate(hosts):
        if host == "*":
            report.error(
                f"spec.hosts[{index}]",
                "the bare wildcard host '*' is not allowed in a ServiceEntry",
            )
            continue
        problem = host_problem(host)
        if problem is not None and _is_partial_wildcard(host):
            suffix = host[1:]
            report.warn(
                f"spec.hosts[{index}]",
                f"partial wildcard host {host!r}: accepted as istiod does, but it matches any"
                f" name ending in {suffix!r}, not only whole labels"
                f" (prefer '*.{suffix.lstrip('-')}')",
            )
        elif problem is not None:
            report.error(
                f"spec.hosts[{index}]", f"{problem}; put IP addresses in addresses or endpoints"
            )


def _is_partial_wildcard(host: str) -> bool:
    """``*x`` or ``*-x.example.com``: Istio lets a ServiceEntry's first label be ``*``
    glued to a DNS label (its wildcard label rule), warning that it is partial."""
    if not host.startswith("*") or host.startswith("*."):
        return False
    rest = host[1:].removeprefix("-")
    return bool(rest) and host_problem(rest, wildcard=False) is None


def _check_addresses(addresses: Sequence[str], resolution: int, report: Report) -> None:
    for index, address in enumerate(addresses):
        check_ip_or_cidr(address, f"spec.addresses[{index}]", report)
    if any("/" in address for address in addresses) and resolution not in (
        ServiceEntry.NONE,
        ServiceEntry.STATIC,
    ):
        report.error("spec.addresses", "CIDR addresses need resolution NONE or STATIC")


def _check_ports(ports: Sequence[Any], resolution: int, report: Report) -> set[str]:
    """Each port, with paths spelled out only for what is reported."""
    names: dict[str, int] = {}
    numbers: dict[int, int] = {}
    for index, port in enumerate(ports):
        number = port.number
        name = port.name
        if not port_number_ok(number):
            check_port_number(number, f"spec.ports[{index}].number", report)
        if not port_name_ok(name):
            check_port_name(name, f"spec.ports[{index}].name", report, required=True)
        if not protocol_ok(port.protocol):
            check_protocol(port.protocol, f"spec.ports[{index}].protocol", report, required=False)
        if name in names:
            report.error(
                f"spec.ports[{index}].name",
                f"port name {name!r} is already used by ports[{names[name]}]",
            )
        elif name:
            names[name] = index
        if number in numbers:
            report.error(
                f"spec.ports[{index}].number",
                f"port {number} is already used by ports[{numbers[number]}]",
            )
        else:
            numbers[number] = index
        target = port.target_port
        if target:
            path = f"spec.ports[{index}]"
            check_port_number(target, f"{path}.targetPort", report)
            if resolution == ServiceEntry.NONE:
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
