"""VirtualService: hosts, gateways, delegation, and its TLS and TCP routes.

A VirtualService without hosts is a delegate: only HTTP routes, no gateways, and it is
used through another VirtualService's ``delegate``.
"""

from __future__ import annotations

from collections.abc import Collection

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import (
    L4MatchAttributes,
    TLSMatchAttributes,
    VirtualService,
)
from pilothouse.config.validation.addresses import check_ip_or_cidr, is_ip
from pilothouse.config.validation.destinations import check_route_destinations
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.hosts import (
    host_problem,
    host_within,
    hosts_overlap,
    is_dns_label,
)
from pilothouse.config.validation.http_match import claim_headers
from pilothouse.config.validation.http_route import check_http_route
from pilothouse.config.validation.labels import check_labels
from pilothouse.config.validation.ports import check_port_number
from pilothouse.config.validation.report import Report
from pilothouse.config.validation.route_reachability import check_reachability, check_route_names
from pilothouse.config.validation.visibility import check_export_to

MESH_GATEWAY = "mesh"


def validate_virtual_service(spec: VirtualService, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    is_delegate = not spec.hosts
    if is_delegate:
        for field, present in (
            ("gateways", bool(spec.gateways)),
            ("tls", bool(spec.tls)),
            ("tcp", bool(spec.tcp)),
        ):
            if present:
                report.error(
                    f"spec.{field}",
                    f"a VirtualService without hosts is a delegate and cannot have {field}",
                )
    check_gateway_refs(spec.gateways, "spec.gateways", report)
    to_gateways = bool(spec.gateways) and MESH_GATEWAY not in spec.gateways
    _check_hosts(spec, report, to_gateways=to_gateways)
    if not (spec.http or spec.tcp or spec.tls):
        report.error("spec", "a VirtualService needs http, tcp or tls routes")
    for index, route in enumerate(spec.http):
        path = f"spec.http[{index}]"
        check_http_route(
            route, path, report, in_delegate=is_delegate, check_gateway_refs=check_gateway_refs
        )
        if not to_gateways:
            for match_index, match in enumerate(route.match):
                for name in claim_headers(match):
                    report.error(
                        f"{path}.match[{match_index}].headers[{name}]",
                        "routing on JWT claims works only for VirtualServices bound to gateways",
                    )
    for index, tls_route in enumerate(spec.tls):
        path = f"spec.tls[{index}]"
        if not tls_route.match:
            report.error(f"{path}.match", "a TLS route needs at least one match with sniHosts")
        for match_index, tls_match in enumerate(tls_route.match):
            _check_tls_match(tls_match, f"{path}.match[{match_index}]", report, spec, to_gateways)
        if not tls_route.route:
            report.error(f"{path}.route", "a TLS route needs a route")
        check_route_destinations(tls_route.route, f"{path}.route", report)
    for index, tcp_route in enumerate(spec.tcp):
        path = f"spec.tcp[{index}]"
        for match_index, l4_match in enumerate(tcp_route.match):
            _check_l4_match(l4_match, f"{path}.match[{match_index}]", report)
        if not tcp_route.route:
            report.error(f"{path}.route", "a TCP route needs a route")
        check_route_destinations(tcp_route.route, f"{path}.route", report)
    check_export_to(spec.export_to, "spec.exportTo", report)
    check_route_names(spec.http, "spec.http", report)
    check_reachability(spec.http, "spec.http", report)
    check_reachability(spec.tcp, "spec.tcp", report)
    check_reachability(spec.tls, "spec.tls", report)


def check_gateway_refs(gateways: Collection[str], path: str, report: Report) -> None:
    """Gateway references: ``mesh``, ``<namespace>/<name>``, or ``<name>`` (same namespace)."""
    for index, ref in enumerate(gateways):
        item = f"{path}[{index}]"
        namespace, slash, name = ref.partition("/")
        if not slash:
            if "." in ref:
                parts = ref.split(".")
                report.warn(
                    item,
                    f"gateway reference {ref!r} uses the legacy <name>.<namespace> form; "
                    f"prefer {parts[1]}/{parts[0]}",
                )
            if host_problem(ref, wildcard=False) is not None:
                report.error(item, f"gateway reference {ref!r} is not a valid gateway name")
            continue
        if not namespace or not name:
            report.error(item, f"gateway reference {ref!r}: namespace and name must both be set")
            continue
        if not is_dns_label(namespace):
            report.error(item, f"gateway reference {ref!r}: {namespace!r} is not a namespace name")
        if not is_dns_label(name):
            report.error(item, f"gateway reference {ref!r}: {name!r} is not a gateway name")


def _check_hosts(spec: VirtualService, report: Report, *, to_gateways: bool) -> None:
    all_valid = True
    for index, host in enumerate(spec.hosts):
        item = f"spec.hosts[{index}]"
        if is_ip(host):
            continue
        problem = host_problem(host)
        if problem is not None:
            report.error(item, problem)
            all_valid = False
        elif host == "*" and not to_gateways:
            report.error(
                item,
                "the wildcard host '*' is allowed only when the VirtualService is bound "
                "to gateways (not to the mesh)",
            )
            all_valid = False
    if not all_valid:
        return
    for i, first in enumerate(spec.hosts):
        for j in range(i + 1, len(spec.hosts)):
            if hosts_overlap(first, spec.hosts[j]):
                report.error(
                    f"spec.hosts[{j}]",
                    f"host {spec.hosts[j]!r} duplicates or overlaps hosts[{i}] {first!r}",
                )


def _check_tls_match(
    match: TLSMatchAttributes,
    path: str,
    report: Report,
    spec: VirtualService,
    to_gateways: bool,
) -> None:
    if not match.sni_hosts:
        report.error(f"{path}.sniHosts", "a TLS match needs at least one SNI host")
    for index, sni in enumerate(match.sni_hosts):
        item = f"{path}.sniHosts[{index}]"
        if is_ip(sni):
            report.warn(item, f"SNI host {sni!r} is an IP address, which most clients never send")
            continue
        problem = host_problem(sni)
        if problem is not None:
            report.error(item, problem)
        elif spec.hosts and not any(host_within(sni, host) for host in spec.hosts):
            report.error(
                item,
                f"SNI host {sni!r} is not within any of the VirtualService hosts "
                f"[{', '.join(spec.hosts)}]",
            )
    _check_l4_common(match, path, report)


def _check_l4_match(match: L4MatchAttributes, path: str, report: Report) -> None:
    if match.source_subnet:
        check_ip_or_cidr(match.source_subnet, f"{path}.sourceSubnet", report)
    _check_l4_common(match, path, report)


def _check_l4_common(
    match: L4MatchAttributes | TLSMatchAttributes, path: str, report: Report
) -> None:
    for index, subnet in enumerate(match.destination_subnets):
        check_ip_or_cidr(subnet, f"{path}.destinationSubnets[{index}]", report)
    if match.port:
        check_port_number(match.port, f"{path}.port", report)
    check_labels(match.source_labels, f"{path}.sourceLabels", report)
    check_gateway_refs(match.gateways, f"{path}.gateways", report)
    if match.source_namespace and not is_dns_label(match.source_namespace):
        report.error(
            f"{path}.sourceNamespace",
            f"source namespace {match.source_namespace!r} is not a namespace name",
        )
