"""The CRD rules every route kind shares (parentRefs, hostnames, backendRefs, header
filters), and those of GRPCRoute, TCPRoute and TLSRoute."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Protocol

from pilothouse.api.k8s.gateway.v1 import routes_pb2, shared_pb2
from pilothouse.config.validation.report import Report
from pilothouse.kinds.gateway_api.checks import (
    check_hostname,
    check_max,
    check_one_of,
    check_port,
    check_reference,
    check_section_name,
    check_unique,
)

HEADER_NAME: Final = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$")
GRPC_SERVICE: Final = re.compile(r"(?i)^\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$")
GRPC_METHOD: Final = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")


class WeightedRef(Protocol):
    group: str
    kind: str
    name: str
    namespace: str

    def HasField(self, field_name: str) -> bool: ...

    @property
    def port(self) -> int: ...

    @property
    def weight(self) -> int: ...


def check_parent_refs(refs: Sequence[shared_pb2.ParentReference], report: Report) -> None:
    check_max(refs, 32, "spec.parentRefs", report)
    seen: dict[tuple[str, str, str, str], list[int]] = {}
    for index, ref in enumerate(refs):
        path = f"spec.parentRefs[{index}]"
        check_reference(ref, path, report)
        if ref.section_name:
            check_section_name(ref.section_name, f"{path}.sectionName", report)
        if ref.HasField("port"):
            check_port(ref.port, f"{path}.port", report)
        parent = (
            ref.group or "gateway.networking.k8s.io",
            ref.kind or "Gateway",
            ref.namespace,
            ref.name,
        )
        seen.setdefault(parent, []).append(index)
    for indexes in seen.values():
        if len(indexes) < 2:
            continue
        if any(not refs[i].section_name and not refs[i].HasField("port") for i in indexes):
            report.error(
                f"spec.parentRefs[{indexes[1]}]",
                "sectionName or port must be specified when parentRefs includes 2 or more "
                "references to the same parent",
            )
        sections = [(refs[i].section_name, refs[i].port) for i in indexes]
        if len(set(sections)) != len(sections):
            report.error(
                f"spec.parentRefs[{indexes[1]}]",
                "sectionName and port must be unique when parentRefs includes 2 or more "
                "references to the same parent",
            )


def check_hostnames(hostnames: Sequence[str], report: Report) -> None:
    check_max(hostnames, 16, "spec.hostnames", report)
    for index, hostname in enumerate(hostnames):
        check_hostname(hostname, f"spec.hostnames[{index}]", report)


def check_backend_ref(ref: WeightedRef, path: str, report: Report, weighted: bool = True) -> None:
    """A backendRef (``weighted``: one with a weight, unlike a mirror's)."""
    check_reference(ref, path, report)
    if ref.HasField("port"):
        check_port(ref.port, f"{path}.port", report)
    elif not ref.group and (ref.kind or "Service") == "Service":
        report.error(f"{path}.port", "must have port for Service reference")
    if not weighted:
        return
    if ref.HasField("weight") and not 0 <= ref.weight <= 1_000_000:
        report.error(f"{path}.weight", f"weight {ref.weight} must be between 0 and 1000000")


def check_header_filter(header: shared_pb2.HTTPHeaderFilter, path: str, report: Report) -> None:
    for field, values in (("set", header.set), ("add", header.add)):
        check_max(values, 16, f"{path}.{field}", report)
        check_unique([v.name.lower() for v in values], f"{path}.{field}", "name", report)
        for index, value in enumerate(values):
            if not HEADER_NAME.match(value.name):
                report.error(f"{path}.{field}[{index}].name", f"invalid header name {value.name!r}")
    check_max(header.remove, 16, f"{path}.remove", report)


def check_mirror(mirror: shared_pb2.HTTPRequestMirrorFilter, path: str, report: Report) -> None:
    if not mirror.HasField("backend_ref"):
        report.error(f"{path}.backendRef", "required")
    else:
        check_backend_ref(mirror.backend_ref, f"{path}.backendRef", report, weighted=False)  # type: ignore[arg-type]
    if mirror.HasField("percent") and mirror.HasField("fraction"):
        report.error(path, "only one of percent or fraction may be specified")
    if mirror.HasField("percent") and not 0 <= mirror.percent <= 100:
        report.error(f"{path}.percent", "percent must be between 0 and 100")
    if mirror.HasField("fraction"):
        fraction = mirror.fraction
        denominator = fraction.denominator if fraction.HasField("denominator") else 100
        if denominator < 1:
            report.error(f"{path}.fraction.denominator", "denominator must be at least 1")
        elif not 0 <= fraction.numerator <= denominator:
            report.error(f"{path}.fraction", "numerator must be between 0 and the denominator")


def check_rule_names(names: Sequence[str], report: Report) -> None:
    for index, name in enumerate(names):
        if name:
            check_section_name(name, f"spec.rules[{index}].name", report)
    check_unique(list(names), "spec.rules", "name", report)


def validate_grpc_route(spec: routes_pb2.GRPCRoute, report: Report) -> None:
    check_parent_refs(spec.parent_refs, report)
    check_hostnames(spec.hostnames, report)
    check_max(spec.rules, 16, "spec.rules", report)
    check_rule_names([rule.name for rule in spec.rules], report)
    for index, rule in enumerate(spec.rules):
        path = f"spec.rules[{index}]"
        check_max(rule.matches, 64, f"{path}.matches", report)
        for m_index, match in enumerate(rule.matches):
            where = f"{path}.matches[{m_index}]"
            if match.HasField("method"):
                _check_grpc_method(match.method, f"{where}.method", report)
            check_max(match.headers, 16, f"{where}.headers", report)
            for h_index, header in enumerate(match.headers):
                check_one_of(
                    header.type or "Exact",
                    ("Exact", "RegularExpression"),
                    f"{where}.headers[{h_index}].type",
                    report,
                )
                if not HEADER_NAME.match(header.name):
                    report.error(
                        f"{where}.headers[{h_index}].name", f"invalid header name {header.name!r}"
                    )
        _check_grpc_filters(rule.filters, f"{path}.filters", report)
        check_max(rule.backend_refs, 16, f"{path}.backendRefs", report)
        for b_index, backend in enumerate(rule.backend_refs):
            check_backend_ref(backend, f"{path}.backendRefs[{b_index}]", report)
            _check_grpc_filters(backend.filters, f"{path}.backendRefs[{b_index}].filters", report)


def _check_grpc_method(method: routes_pb2.GRPCMethodMatch, path: str, report: Report) -> None:
    kind = method.type or "Exact"
    check_one_of(kind, ("Exact", "RegularExpression"), f"{path}.type", report)
    if not method.service and not method.method:
        report.error(path, "one or both of 'service' or 'method' must be specified")
    if kind == "Exact":
        if method.service and not GRPC_SERVICE.match(method.service):
            report.error(
                f"{path}.service", f"service {method.service!r} is not a valid gRPC service name"
            )
        if method.method and not GRPC_METHOD.match(method.method):
            report.error(
                f"{path}.method", f"method {method.method!r} is not a valid gRPC method name"
            )


_GRPC_FILTERS: Final = {
    "RequestHeaderModifier": "request_header_modifier",
    "ResponseHeaderModifier": "response_header_modifier",
    "RequestMirror": "request_mirror",
    "ExtensionRef": "extension_ref",
}


def _check_grpc_filters(
    filters: Sequence[routes_pb2.GRPCRouteFilter], path: str, report: Report
) -> None:
    check_max(filters, 16, path, report)
    for index, grpc_filter in enumerate(filters):
        check_filter_fields(grpc_filter, _GRPC_FILTERS, f"{path}[{index}]", report)
        if grpc_filter.HasField("request_header_modifier"):
            check_header_filter(
                grpc_filter.request_header_modifier,
                f"{path}[{index}].requestHeaderModifier",
                report,
            )
        if grpc_filter.HasField("response_header_modifier"):
            check_header_filter(
                grpc_filter.response_header_modifier,
                f"{path}[{index}].responseHeaderModifier",
                report,
            )
        if grpc_filter.HasField("request_mirror"):
            check_mirror(grpc_filter.request_mirror, f"{path}[{index}].requestMirror", report)
    kinds = [f.type for f in filters]
    for once in ("RequestHeaderModifier", "ResponseHeaderModifier"):
        if kinds.count(once) > 1:
            report.error(path, f"{once} filter cannot be repeated")


class TypedFilter(Protocol):
    @property
    def type(self) -> str: ...

    def HasField(self, field_name: str) -> bool: ...


def check_filter_fields(
    route_filter: TypedFilter, fields: dict[str, str], path: str, report: Report
) -> None:
    """``type`` is one of ``fields``, its own field is set, and no other filter's is."""
    check_one_of(route_filter.type, tuple(fields), f"{path}.type", report)
    for kind, field in fields.items():
        camel = field.split("_")[0] + "".join(p.capitalize() for p in field.split("_")[1:])
        if field == "url_rewrite":
            camel = "urlRewrite"
        has = route_filter.HasField(field)
        if has and kind != route_filter.type:
            report.error(
                f"{path}.{camel}", f"filter.{camel} must be nil if the filter.type is not {kind}"
            )
        if not has and kind == route_filter.type:
            report.error(
                f"{path}.{camel}", f"filter.{camel} must be specified for {kind} filter.type"
            )


def validate_tcp_route(spec: routes_pb2.TCPRoute, report: Report) -> None:
    check_parent_refs(spec.parent_refs, report)
    _check_l4_rules(spec.rules, report)


def validate_tls_route(spec: routes_pb2.TLSRoute, report: Report) -> None:
    check_parent_refs(spec.parent_refs, report)
    check_hostnames(spec.hostnames, report)
    _check_l4_rules(spec.rules, report)


def _check_l4_rules(rules: Sequence[routes_pb2.L4RouteRule], report: Report) -> None:
    if not rules:
        report.error("spec.rules", "at least one rule is required")
    check_max(rules, 16, "spec.rules", report)
    check_rule_names([rule.name for rule in rules], report)
    for index, rule in enumerate(rules):
        if not rule.backend_refs:
            report.error(f"spec.rules[{index}].backendRefs", "at least one backendRef is required")
        check_max(rule.backend_refs, 16, f"spec.rules[{index}].backendRefs", report)
        for b_index, backend in enumerate(rule.backend_refs):
            check_backend_ref(backend, f"spec.rules[{index}].backendRefs[{b_index}]", report)
