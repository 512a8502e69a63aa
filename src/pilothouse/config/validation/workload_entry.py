"""WorkloadEntry: a workload outside Kubernetes, standalone or as a ServiceEntry endpoint."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pilothouse.api.istio.networking.v1alpha3.workload_entry_pb2 import WorkloadEntry
from pilothouse.config.validation.addresses import UNIX_PREFIX, check_unix_socket, is_ip
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.hosts import host_problem, is_dns_subdomain
from pilothouse.config.validation.labels import check_labels
from pilothouse.config.validation.ports import (
    check_port_name,
    check_port_number,
    port_name_ok,
    port_number_ok,
)
from pilothouse.config.validation.report import Report


def validate_workload_entry(spec: WorkloadEntry, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    check_workload_entry(spec, "spec", report)


def check_workload_entry(
    entry: WorkloadEntry,
    path: str,
    report: Report,
    *,
    service_ports: Collection[str] | None = None,
    allow_hostname: bool = True,
    allow_unix: bool = True,
    check_address: bool = True,
) -> None:
    """Check a workload entry at ``path``.

    ``service_ports`` are the port names of the enclosing ServiceEntry (None for a
    standalone entry). ``allow_hostname`` and ``allow_unix`` say which address forms the
    enclosing resolution accepts (a standalone entry accepts IPs, host names and sockets).
    ``check_address`` is off for WorkloadGroup templates, whose address comes at registration.
    """
    address = entry.address
    if check_address:
        _check_address(
            entry, address, path, report, allow_hostname=allow_hostname, allow_unix=allow_unix
        )
    ports = entry.ports
    if address.startswith(UNIX_PREFIX):
        if ports:
            report.error(f"{path}.ports", f"unix socket endpoint {address!r} must not list ports")
        if service_ports is not None and len(service_ports) != 1:
            report.error(
                f"{path}.address",
                "a unix socket endpoint needs a ServiceEntry with exactly one port",
            )
    if ports:
        _check_ports(ports, path, report, service_ports)
    labels = entry.labels
    if labels:
        check_labels(labels, f"{path}.labels", report)
    account = entry.service_account
    if account and not is_dns_subdomain(account):
        report.error(
            f"{path}.serviceAccount",
            f"service account {account!r} is not a valid Kubernetes name "
            "(lowercase DNS-1123 subdomain)",
        )


def _check_ports(
    ports: Mapping[str, int], path: str, report: Report, service_ports: Collection[str] | None
) -> None:
    """The named ports, reported as ``path.ports[name]`` in name order (sorted only when
    something is wrong: the first pass just looks)."""
    for name in ports:
        if not (
            (service_ports is None or name in service_ports)
            and port_name_ok(name)
            and port_number_ok(ports[name])
        ):
            break
    else:
        return
    for name in sorted(ports):
        number = ports[name]
        declared = service_ports is None or name in service_ports
        if declared and port_name_ok(name) and port_number_ok(number):
            continue
        port_path = f"{path}.ports[{name}]"
        if not declared:
            report.error(port_path, f"port name {name!r} is not declared in the ServiceEntry ports")
        check_port_name(name, port_path, report, required=True)
        check_port_number(number, port_path, report)


def _check_address(
    entry: WorkloadEntry,
    address: str,
    path: str,
    report: Report,
    *,
    allow_hostname: bool,
    allow_unix: bool,
) -> None:
    if is_ip(address):
        return
    address_path = f"{path}.address"
    if not address:
        if entry.network:
            report.warn(
                address_path,
                f"address is unset; the workload is reached through the gateway of network "
                f"{entry.network!r}",
            )
        else:
            report.error(address_path, "address is required (unless network is set)")
        return
    if address.startswith(UNIX_PREFIX):
        if allow_unix:
            check_unix_socket(address, address_path, report)
        else:
            report.error(address_path, "unix socket addresses need resolution STATIC")
        return
    if not allow_hostname:
        report.error(address_path, f"endpoint address {address!r} is not an IP address")
        return
    if host_problem(address, wildcard=False) is not None:
        report.error(address_path, f"endpoint address {address!r} is not an IP address or FQDN")
