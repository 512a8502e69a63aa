"""AuthorizationPolicy: action and provider, rules (``from``/``to``/``when``), target."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pilothouse.api.istio.security.v1beta1.authorization_policy_pb2 import (
    AuthorizationPolicy,
    Condition,
    Operation,
    Rule,
    Source,
)
from pilothouse.config.validation.addresses import check_ip_or_cidr
from pilothouse.config.validation.authorization_conditions import (
    condition_value_problem,
    parse_condition_key,
)
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.policy_target import check_policy_target
from pilothouse.config.validation.ports import port_number_ok
from pilothouse.config.validation.report import Report

CUSTOM = AuthorizationPolicy.Action.CUSTOM
_SOURCE_FIELDS = (
    ("principals", "principals"),
    ("not_principals", "notPrincipals"),
    ("request_principals", "requestPrincipals"),
    ("not_request_principals", "notRequestPrincipals"),
    ("namespaces", "namespaces"),
    ("not_namespaces", "notNamespaces"),
    ("service_accounts", "serviceAccounts"),
    ("not_service_accounts", "notServiceAccounts"),
    ("ip_blocks", "ipBlocks"),
    ("not_ip_blocks", "notIpBlocks"),
    ("remote_ip_blocks", "remoteIpBlocks"),
    ("not_remote_ip_blocks", "notRemoteIpBlocks"),
    ("trust_domains", "trustDomains"),
    ("not_trust_domains", "notTrustDomains"),
)
_OPERATION_FIELDS = (
    ("hosts", "hosts"),
    ("not_hosts", "notHosts"),
    ("ports", "ports"),
    ("not_ports", "notPorts"),
    ("methods", "methods"),
    ("not_methods", "notMethods"),
    ("paths", "paths"),
    ("not_paths", "notPaths"),
)
# String fields matched exactly or with one '*' at the start or end.
_GLOB_FIELDS = frozenset(
    {"principals", "notPrincipals", "requestPrincipals", "notRequestPrincipals",
     "namespaces", "notNamespaces", "hosts", "notHosts", "trustDomains", "notTrustDomains"}
)  # fmt: skip
_PATH_LITERAL = re.compile(r"[A-Za-z0-9\-._~!$&'()+,;=:@%]*")
"""RFC 3986 ``pchar``, a template's literal segment (``*`` is refused earlier: Envoy would
read it as an operator)."""
_PEER_IDENTITY_FIELDS = frozenset({"principals", "notPrincipals", "namespaces", "notNamespaces"})


def validate_authorization_policy(spec: AuthorizationPolicy, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    check_policy_target(
        spec.selector if spec.HasField("selector") else None,
        spec.targetRef if spec.HasField("targetRef") else None,
        spec.targetRefs,
        report,
    )
    _check_action(spec, report)
    for i, rule in enumerate(spec.rules):
        _check_rule(rule, f"spec.rules[{i}]", report)


def _check_action(spec: AuthorizationPolicy, report: Report) -> None:
    if spec.action == CUSTOM:
        if not spec.HasField("provider"):
            report.error("spec.provider", "action CUSTOM needs a provider")
        elif not spec.provider.name:
            report.error("spec.provider.name", "provider name must not be empty")
    elif spec.HasField("provider"):
        action = AuthorizationPolicy.Action.Name(spec.action)
        report.error("spec.provider", f"provider is only allowed with action CUSTOM, not {action}")


def _check_rule(rule: Rule, path: str, report: Report) -> None:
    sources = getattr(rule, "from")
    if not sources and not rule.to and not rule.when:
        return  # an empty rule matches every request
    for i, source in enumerate(sources):
        at = f"{path}.from[{i}].source"
        if not source.HasField("source") or not source.source.ListFields():
            report.error(at, "source must not be empty")
        else:
            _check_source(source.source, at, report)
    for i, target in enumerate(rule.to):
        at = f"{path}.to[{i}].operation"
        if not target.HasField("operation") or not target.operation.ListFields():
            report.error(at, "operation must not be empty")
        else:
            _check_operation(target.operation, at, report)
    for i, condition in enumerate(rule.when):
        _check_condition(condition, f"{path}.when[{i}]", report)


def _check_source(source: Source, path: str, report: Report) -> None:
    for field, json_name in _SOURCE_FIELDS:
        _check_values(getattr(source, field), json_name, f"{path}.{json_name}", report)
    for field in ("ip_blocks", "not_ip_blocks", "remote_ip_blocks", "not_remote_ip_blocks"):
        json_name = dict(_SOURCE_FIELDS)[field]
        for i, value in enumerate(getattr(source, field)):
            check_ip_or_cidr(value, f"{path}.{json_name}[{i}]", report)
    for field, json_name in (("service_accounts", "serviceAccounts"),
                             ("not_service_accounts", "notServiceAccounts")):  # fmt: skip
        for i, value in enumerate(getattr(source, field)):
            if value.count("/") > 1 or "" in value.split("/"):
                at = f"{path}.{json_name}[{i}]"
                report.error(
                    at, f"{value!r} must be a service account name or namespace/serviceaccount"
                )
    if (source.service_accounts or source.not_service_accounts) and (
        source.principals or source.not_principals or source.namespaces or source.not_namespaces
    ):
        report.error(
            path, "serviceAccounts cannot be combined with principals or namespaces (as istiod)"
        )
    used = [name for field, name in _SOURCE_FIELDS if getattr(source, field)]
    for json_name in used:
        if json_name in _PEER_IDENTITY_FIELDS:
            report.warn(
                f"{path}.{json_name}",
                f"{json_name} come from the peer's mutual TLS certificate: plain-text "
                "requests (PeerAuthentication PERMISSIVE or DISABLE) have none and never match",
            )


def _check_operation(operation: Operation, path: str, report: Report) -> None:
    for field, json_name in _OPERATION_FIELDS:
        _check_values(getattr(operation, field), json_name, f"{path}.{json_name}", report)
    for field, json_name in (("ports", "ports"), ("not_ports", "notPorts")):
        for i, value in enumerate(getattr(operation, field)):
            if not value.isdigit() or not port_number_ok(int(value)):
                report.error(f"{path}.{json_name}[{i}]", f"{value!r} is not a valid port number")
    for field, json_name in (("paths", "paths"), ("not_paths", "notPaths")):
        for i, value in enumerate(getattr(operation, field)):
            problem = _path_problem(value)
            if problem is not None:
                report.error(f"{path}.{json_name}[{i}]", problem)


def _path_problem(value: str) -> str | None:
    """Istio's rules for a path: a glob (``*`` first or last) or a template.

    In a template every segment is ``{*}`` (one segment), ``{**}`` (any rest) or a
    literal; ``{**}`` must be the last *operator* (literal segments may follow it, as in
    ``/{**}/index.html``) and literals hold only RFC 3986 path characters. Istio does
    not require a leading ``/``: a path without one is accepted (and matches nothing
    a client can send, as under istiod).
    """
    if "{" not in value and "}" not in value:
        return None
    seen_any = False
    for segment in value.strip("/").split("/"):
        if segment in ("{*}", "{**}"):
            if seen_any:
                return f"path template {value!r}: {{**}} must be the last operator"
            seen_any = segment == "{**}"
        elif "{" in segment or "}" in segment:
            return f"path template {value!r}: only whole segments {{*}} and {{**}} are allowed"
        elif "*" in segment:
            return f"path template {value!r} cannot also use '*' globs"
        elif _PATH_LITERAL.fullmatch(segment) is None:
            return f"path template {value!r}: segment {segment!r} is not a valid literal"
    return None


def _check_values(values: Sequence[str], json_name: str, path: str, report: Report) -> None:
    for i, value in enumerate(values):
        if not value:
            report.error(f"{path}[{i}]", "value must not be empty")
        elif json_name in _GLOB_FIELDS and "*" in value[1:-1]:
            report.error(
                f"{path}[{i}]", f"{value!r}: '*' is only allowed as the first or last character"
            )


def _check_condition(condition: Condition, path: str, report: Report) -> None:
    if not condition.key:
        report.error(f"{path}.key", "key must not be empty")
        return
    key = parse_condition_key(condition.key)
    if key is None:
        report.error(f"{path}.key", f"unknown attribute {condition.key!r}")
        return
    if not condition.values and not condition.not_values:
        report.error(path, f"at least one of values or notValues must be set for {condition.key}")
    for field, json_name in (("values", "values"), ("not_values", "notValues")):
        for i, value in enumerate(getattr(condition, field)):
            problem = condition_value_problem(key, value)
            if problem is not None:
                report.error(f"{path}.{json_name}[{i}]", problem)
