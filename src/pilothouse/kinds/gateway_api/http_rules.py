"""The CRD rules of HTTPRoute (OpenAPI and CEL): matches, filters, backends, timeouts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from pilothouse.api.k8s.gateway.v1 import routes_pb2, shared_pb2
from pilothouse.config.validation.regex import regex_problem
from pilothouse.config.validation.report import Report
from pilothouse.kinds.gateway_api.checks import (
    DURATION,
    check_duration,
    check_hostname,
    check_max,
    check_one_of,
    check_port,
    duration_ms,
)
from pilothouse.kinds.gateway_api.route_rules import (
    HEADER_NAME,
    check_backend_ref,
    check_filter_fields,
    check_header_filter,
    check_hostnames,
    check_mirror,
    check_parent_refs,
    check_rule_names,
)

PATH_TYPES: Final = ("Exact", "PathPrefix", "RegularExpression")
METHODS: Final = ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")
REDIRECT_CODES: Final = (301, 302, 303, 307, 308)
PATH_CHARACTERS: Final = re.compile(r"^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$")
HTTP_FILTERS: Final = {
    "RequestHeaderModifier": "request_header_modifier",
    "ResponseHeaderModifier": "response_header_modifier",
    "RequestMirror": "request_mirror",
    "RequestRedirect": "request_redirect",
    "URLRewrite": "url_rewrite",
    "ExtensionRef": "extension_ref",
    "CORS": "cors",
}


def validate_http_route(spec: routes_pb2.HTTPRoute, report: Report) -> None:
    check_parent_refs(spec.parent_refs, report)
    check_hostnames(spec.hostnames, report)
    check_max(spec.rules, 16, "spec.rules", report)
    check_rule_names([rule.name for rule in spec.rules], report)
    for index, rule in enumerate(spec.rules):
        _check_rule(rule, f"spec.rules[{index}]", report)


def _check_rule(rule: routes_pb2.HTTPRouteRule, path: str, report: Report) -> None:
    check_max(rule.matches, 64, f"{path}.matches", report)
    for index, match in enumerate(rule.matches):
        _check_match(match, f"{path}.matches[{index}]", report)
    check_filters(rule.filters, f"{path}.filters", report)
    kinds = [f.type for f in rule.filters]
    if "RequestRedirect" in kinds and rule.backend_refs:
        report.error(path, "RequestRedirect filter must not be used together with backendRefs")
    for route_filter in rule.filters:
        modifier = None
        if route_filter.type == "RequestRedirect":
            modifier = route_filter.request_redirect.path
        elif route_filter.type == "URLRewrite":
            modifier = route_filter.url_rewrite.path
        if modifier is not None and modifier.type == "ReplacePrefixMatch":
            # The API server defaults an absent match or path to PathPrefix "/".
            prefixes = [m for m in rule.matches if (m.path.type or "PathPrefix") == "PathPrefix"]
            if len(rule.matches) > 1 or len(prefixes) != len(rule.matches):
                report.error(
                    f"{path}.filters",
                    f"when using {route_filter.type} filter with path.type ReplacePrefixMatch, "
                    "exactly one PathPrefix match must be specified",
                )
    check_max(rule.backend_refs, 16, f"{path}.backendRefs", report)
    for index, backend in enumerate(rule.backend_refs):
        where = f"{path}.backendRefs[{index}]"
        check_backend_ref(backend, where, report)
        check_filters(backend.filters, f"{where}.filters", report)
    if rule.HasField("timeouts"):
        timeouts = rule.timeouts
        check_duration(timeouts.request, f"{path}.timeouts.request", report)
        check_duration(timeouts.backend_request, f"{path}.timeouts.backendRequest", report)
        request, backend_request = timeouts.request, timeouts.backend_request
        valid = all(DURATION.match(d) for d in (request, backend_request))
        if (
            valid
            and duration_ms(request) != 0
            and duration_ms(backend_request) > duration_ms(request)
        ):
            report.error(
                f"{path}.timeouts", "backendRequest timeout cannot be longer than request timeout"
            )
    if rule.HasField("retry"):
        for index, code in enumerate(rule.retry.codes):
            if not 400 <= code <= 599:
                report.error(f"{path}.retry.codes[{index}]", f"code {code} must be 400 to 599")
        check_duration(rule.retry.backoff, f"{path}.retry.backoff", report)


def _check_match(match: routes_pb2.HTTPRouteMatch, path: str, report: Report) -> None:
    if match.HasField("path"):
        _check_path(match.path, f"{path}.path", report)
    matchers: list[
        tuple[str, Sequence[routes_pb2.HTTPHeaderMatch | routes_pb2.HTTPQueryParamMatch]]
    ]
    matchers = [("headers", match.headers), ("queryParams", match.query_params)]
    for field, items in matchers:
        check_max(items, 16, f"{path}.{field}", report)
        names: set[str] = set()
        for index, item in enumerate(items):
            where = f"{path}.{field}[{index}]"
            check_one_of(
                item.type or "Exact", ("Exact", "RegularExpression"), f"{where}.type", report
            )
            if not HEADER_NAME.match(item.name):
                report.error(f"{where}.name", f"invalid name {item.name!r}")
            key = item.name.lower() if field == "headers" else item.name
            if key in names:
                report.error(f"{where}.name", f"name {item.name!r} must be unique")
            names.add(key)
            if item.type == "RegularExpression":
                problem = regex_problem(item.value)
                if problem is not None:
                    report.error(f"{where}.value", problem)
    if match.method:
        check_one_of(match.method, METHODS, f"{path}.method", report)


def _check_path(match: routes_pb2.HTTPPathMatch, path: str, report: Report) -> None:
    kind = match.type or "PathPrefix"
    check_one_of(kind, PATH_TYPES, f"{path}.type", report)
    value = match.value if match.HasField("value") else "/"
    if len(value) > 1024:
        report.error(f"{path}.value", "must be at most 1024 characters")
    if kind == "RegularExpression":
        problem = regex_problem(value)
        if problem is not None:
            report.error(f"{path}.value", problem)
        return
    if not value.startswith("/"):
        report.error(
            f"{path}.value",
            f"value must be an absolute path and start with '/' when type is {kind}",
        )
        return
    for bad in ("//", "/./", "/../", "%2f", "%2F", "#"):
        if bad in value:
            report.error(f"{path}.value", f"must not contain {bad!r} when type is {kind}")
    for end in ("/..", "/."):
        if value.endswith(end):
            report.error(f"{path}.value", f"must not end with {end!r} when type is {kind}")
    if not PATH_CHARACTERS.match(value):
        report.error(
            f"{path}.value",
            f"must only contain valid characters (matching {PATH_CHARACTERS.pattern})",
        )


def check_filters(filters: Sequence[routes_pb2.HTTPRouteFilter], path: str, report: Report) -> None:
    check_max(filters, 16, path, report)
    for index, route_filter in enumerate(filters):
        where = f"{path}[{index}]"
        check_filter_fields(route_filter, HTTP_FILTERS, where, report)
        if route_filter.HasField("request_header_modifier"):
            check_header_filter(
                route_filter.request_header_modifier, f"{where}.requestHeaderModifier", report
            )
        if route_filter.HasField("response_header_modifier"):
            check_header_filter(
                route_filter.response_header_modifier, f"{where}.responseHeaderModifier", report
            )
        if route_filter.HasField("request_mirror"):
            check_mirror(route_filter.request_mirror, f"{where}.requestMirror", report)
        if route_filter.HasField("request_redirect"):
            _check_redirect(route_filter.request_redirect, f"{where}.requestRedirect", report)
        if route_filter.HasField("url_rewrite"):
            rewrite = route_filter.url_rewrite
            if rewrite.hostname:
                check_hostname(rewrite.hostname, f"{where}.urlRewrite.hostname", report)
            if rewrite.HasField("path"):
                _check_path_modifier(rewrite.path, f"{where}.urlRewrite.path", report)
    kinds = [f.type for f in filters]
    for once in (
        "RequestHeaderModifier",
        "ResponseHeaderModifier",
        "RequestRedirect",
        "URLRewrite",
        "CORS",
    ):
        if kinds.count(once) > 1:
            report.error(path, f"{once} filter cannot be repeated")
    if "RequestRedirect" in kinds and "URLRewrite" in kinds:
        report.error(path, "may specify either RequestRedirect or URLRewrite, but not both")


def _check_redirect(
    redirect: shared_pb2.HTTPRequestRedirectFilter, path: str, report: Report
) -> None:
    if redirect.scheme:
        check_one_of(redirect.scheme, ("http", "https"), f"{path}.scheme", report)
    if redirect.hostname:
        check_hostname(redirect.hostname, f"{path}.hostname", report)
    if redirect.HasField("port"):
        check_port(redirect.port, f"{path}.port", report)
    if redirect.HasField("status_code") and redirect.status_code not in REDIRECT_CODES:
        report.error(
            f"{path}.statusCode",
            f"unsupported value {redirect.status_code}: must be one of 301, 302, 303, 307, 308",
        )
    if redirect.HasField("path"):
        _check_path_modifier(redirect.path, f"{path}.path", report)


def _check_path_modifier(modifier: shared_pb2.HTTPPathModifier, path: str, report: Report) -> None:
    check_one_of(modifier.type, ("ReplaceFullPath", "ReplacePrefixMatch"), f"{path}.type", report)
    full, prefix = modifier.replace_full_path, modifier.replace_prefix_match
    if modifier.type == "ReplaceFullPath" and not full:
        report.error(
            f"{path}.replaceFullPath",
            "replaceFullPath must be specified when type is set to 'ReplaceFullPath'",
        )
    if full and modifier.type != "ReplaceFullPath":
        report.error(f"{path}.type", "type must be 'ReplaceFullPath' when replaceFullPath is set")
    if modifier.type == "ReplacePrefixMatch" and not prefix:
        report.error(
            f"{path}.replacePrefixMatch",
            "replacePrefixMatch must be specified when type is set to 'ReplacePrefixMatch'",
        )
    if prefix and modifier.type != "ReplacePrefixMatch":
        report.error(
            f"{path}.type", "type must be 'ReplacePrefixMatch' when replacePrefixMatch is set"
        )
