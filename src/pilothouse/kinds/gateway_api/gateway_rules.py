"""The CRD rules of GatewayClass, Gateway and ReferenceGrant (OpenAPI and CEL), as
errors at field paths."""

from __future__ import annotations

import ipaddress
import re
from typing import Final

from pilothouse.api.k8s.gateway.v1 import gateway_pb2, reference_grant_pb2
from pilothouse.config.validation.report import Report
from pilothouse.kinds.gateway_api.checks import (
    GROUP,
    KIND_NAME,
    NAMESPACE,
    check_hostname,
    check_max,
    check_one_of,
    check_pattern,
    check_port,
    check_reference,
    check_required,
    check_section_name,
    check_unique,
)

CONTROLLER_NAME: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/"
    r"[A-Za-z0-9\/\-._~%!$&'()*+,;=:]+$"
)
PROTOCOL: Final = re.compile(
    r"^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$|"
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]+$"
)
TLS_PROTOCOLS: Final = ("HTTPS", "TLS")
NO_TLS_PROTOCOLS: Final = ("HTTP", "TCP", "UDP")
NO_HOSTNAME_PROTOCOLS: Final = ("TCP", "UDP")


def validate_gateway_class(spec: gateway_pb2.GatewayClass, report: Report) -> None:
    if check_required(spec.controller_name, "spec.controllerName", report):
        check_pattern(
            spec.controller_name, CONTROLLER_NAME, "spec.controllerName", "controllerName", report
        )
    if spec.HasField("parameters_ref"):
        check_reference(spec.parameters_ref, "spec.parametersRef", report)
    if len(spec.description) > 64:
        report.error("spec.description", "must be at most 64 characters")


def validate_gateway(spec: gateway_pb2.Gateway, report: Report) -> None:
    if check_required(spec.gateway_class_name, "spec.gatewayClassName", report):
        check_section_name(spec.gateway_class_name, "spec.gatewayClassName", report)
    if not spec.listeners:
        report.error("spec.listeners", "a Gateway needs at least one listener")
    check_max(spec.listeners, 64, "spec.listeners", report)
    check_unique([listener.name for listener in spec.listeners], "spec.listeners", "name", report)
    combinations: dict[tuple[int, str, str], int] = {}
    for index, listener in enumerate(spec.listeners):
        path = f"spec.listeners[{index}]"
        _check_listener(listener, path, report)
        combination = (listener.port, listener.protocol, listener.hostname)
        if combination in combinations:
            report.error(
                path,
                f"combination of port, protocol and hostname must be unique for each listener "
                f"(same as spec.listeners[{combinations[combination]}])",
            )
        combinations.setdefault(combination, index)
    check_max(spec.addresses, 16, "spec.addresses", report)
    seen: set[tuple[str, str]] = set()
    for index, address in enumerate(spec.addresses):
        path = f"spec.addresses[{index}]"
        kind = address.type or "IPAddress"
        check_pattern(
            kind,
            re.compile(
                r"^Hostname|IPAddress|NamedAddress|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9\/\-._~%!$&'()*+,;=:]+$"
            ),
            f"{path}.type",
            "address type",
            report,
        )
        if kind == "IPAddress" and address.value:
            try:
                ipaddress.ip_address(address.value)
            except ValueError:
                report.error(f"{path}.value", f"IPAddress {address.value!r} is not an IP address")
        if kind == "Hostname" and address.value:
            check_hostname(address.value, f"{path}.value", report)
        if (kind, address.value) in seen:
            report.error(path, f"{kind} values must be unique")
        seen.add((kind, address.value))


def _check_listener(listener: gateway_pb2.Listener, path: str, report: Report) -> None:
    if check_required(listener.name, f"{path}.name", report):
        check_section_name(listener.name, f"{path}.name", report)
    check_port(listener.port, f"{path}.port", report)
    protocol = listener.protocol
    if check_required(protocol, f"{path}.protocol", report):
        check_pattern(protocol, PROTOCOL, f"{path}.protocol", "protocol", report, limit=255)
    if listener.hostname:
        check_hostname(listener.hostname, f"{path}.hostname", report)
        if protocol in NO_HOSTNAME_PROTOCOLS:
            report.error(f"{path}.hostname", f"hostname must not be specified for {protocol}")
    if listener.HasField("tls"):
        if protocol in NO_TLS_PROTOCOLS:
            report.error(f"{path}.tls", f"tls must not be specified for protocol {protocol}")
        _check_tls(listener.tls, f"{path}.tls", report)
    elif protocol in TLS_PROTOCOLS:
        report.error(f"{path}.tls", f"tls must be specified for protocol {protocol}")
    if listener.HasField("allowed_routes"):
        _check_allowed_routes(listener.allowed_routes, f"{path}.allowedRoutes", report)


def _check_tls(tls: gateway_pb2.GatewayTLSConfig, path: str, report: Report) -> None:
    mode = tls.mode or "Terminate"
    check_one_of(mode, ("Terminate", "Passthrough"), f"{path}.mode", report)
    check_max(tls.certificate_refs, 64, f"{path}.certificateRefs", report)
    if mode == "Terminate" and not tls.certificate_refs and not tls.options:
        report.error(
            f"{path}", "certificateRefs or options must be specified when mode is Terminate"
        )
    for index, ref in enumerate(tls.certificate_refs):
        check_reference(ref, f"{path}.certificateRefs[{index}]", report)
    for index, ca_ref in enumerate(tls.frontend_validation.ca_certificate_refs):
        check_reference(ca_ref, f"{path}.frontendValidation.caCertificateRefs[{index}]", report)
    check_max(list(tls.options), 16, f"{path}.options", report)


def _check_allowed_routes(allowed: gateway_pb2.AllowedRoutes, path: str, report: Report) -> None:
    namespaces = allowed.namespaces
    source: str = getattr(namespaces, "from")  # a Python keyword
    if source:
        check_one_of(source, ("All", "Selector", "Same"), f"{path}.namespaces.from", report)
    if source == "Selector" and not namespaces.HasField("selector"):
        report.error(
            f"{path}.namespaces.selector", "selector must be specified when from is Selector"
        )
    for index, requirement in enumerate(namespaces.selector.match_expressions):
        where = f"{path}.namespaces.selector.matchExpressions[{index}]"
        check_one_of(
            requirement.operator,
            ("In", "NotIn", "Exists", "DoesNotExist"),
            f"{where}.operator",
            report,
        )
        if requirement.operator in ("In", "NotIn") and not requirement.values:
            report.error(
                f"{where}.values", f"values must be set for operator {requirement.operator}"
            )
        if requirement.operator in ("Exists", "DoesNotExist") and requirement.values:
            report.error(
                f"{where}.values", f"values must be empty for operator {requirement.operator}"
            )
    check_max(allowed.kinds, 8, f"{path}.kinds", report)
    for index, kind in enumerate(allowed.kinds):
        check_pattern(kind.group, GROUP, f"{path}.kinds[{index}].group", "group", report)
        if check_required(kind.kind, f"{path}.kinds[{index}].kind", report):
            check_pattern(kind.kind, KIND_NAME, f"{path}.kinds[{index}].kind", "kind", report, 63)


def validate_reference_grant(spec: reference_grant_pb2.ReferenceGrant, report: Report) -> None:
    grants_from = getattr(spec, "from")
    if not grants_from:
        report.error("spec.from", "a ReferenceGrant needs at least one from entry")
    if not spec.to:
        report.error("spec.to", "a ReferenceGrant needs at least one to entry")
    check_max(grants_from, 16, "spec.from", report)
    check_max(spec.to, 16, "spec.to", report)
    for index, source in enumerate(grants_from):
        path = f"spec.from[{index}]"
        check_pattern(source.group, GROUP, f"{path}.group", "group", report)
        if check_required(source.kind, f"{path}.kind", report):
            check_pattern(source.kind, KIND_NAME, f"{path}.kind", "kind", report, 63)
        if check_required(source.namespace, f"{path}.namespace", report):
            check_pattern(source.namespace, NAMESPACE, f"{path}.namespace", "namespace", report, 63)
    for index, target in enumerate(spec.to):
        path = f"spec.to[{index}]"
        check_pattern(target.group, GROUP, f"{path}.group", "group", report)
        if check_required(target.kind, f"{path}.kind", report):
            check_pattern(target.kind, KIND_NAME, f"{path}.kind", "kind", report, 63)
