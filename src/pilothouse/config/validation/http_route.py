"""One HTTP route of a VirtualService: its action (route, redirect, direct response or
delegate), the parts of its action, and everything else a route carries."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import (
    HTTPDirectResponse,
    HTTPRedirect,
    HTTPRewrite,
    HTTPRoute,
)
from pilothouse.config.validation.cors import check_cors
from pilothouse.config.validation.destinations import check_destination, check_route_destinations
from pilothouse.config.validation.headers import authority_header_value, check_header_operations
from pilothouse.config.validation.hosts import is_dns_label, is_dns_subdomain
from pilothouse.config.validation.http_match import GatewayRefCheck, check_http_match
from pilothouse.config.validation.http_resilience import (
    check_fault,
    check_http_status,
    check_retries,
)
from pilothouse.config.validation.ports import check_port_number
from pilothouse.config.validation.quantities import check_duration, check_fractional_percent
from pilothouse.config.validation.regex import check_regex
from pilothouse.config.validation.report import Report

REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
DIRECT_RESPONSE_WARN_BYTES = 100 * 1024
DIRECT_RESPONSE_MAX_BYTES = 1024 * 1024


def check_http_route(
    route: HTTPRoute,
    path: str,
    report: Report,
    *,
    in_delegate: bool,
    check_gateway_refs: GatewayRefCheck,
) -> None:
    """Check one entry of ``spec.http``; ``in_delegate`` is true for delegate VirtualServices."""
    is_root = route.HasField("delegate")
    _check_action(route, path, report, in_delegate=in_delegate)
    for index, match in enumerate(route.match):
        check_http_match(
            match,
            f"{path}.match[{index}]",
            report,
            delegating=is_root or in_delegate,
            check_gateway_refs=check_gateway_refs,
        )
    if route.HasField("headers"):
        check_header_operations(route.headers, f"{path}.headers", report)
    if route.HasField("cors_policy"):
        check_cors(route.cors_policy, f"{path}.corsPolicy", report)
    if route.HasField("fault"):
        check_fault(route.fault, f"{path}.fault", report)
    _check_mirrors(route, path, report)
    if route.HasField("redirect"):
        _check_redirect(route.redirect, f"{path}.redirect", report)
    if route.HasField("direct_response"):
        _check_direct_response(route.direct_response, f"{path}.directResponse", report)
    if route.HasField("retries"):
        check_retries(route.retries, f"{path}.retries", report)
    if route.HasField("rewrite"):
        _check_rewrite(route.rewrite, f"{path}.rewrite", report)
        if route.rewrite.authority and authority_header_value(route.headers) is not None:
            report.error(
                f"{path}.rewrite.authority",
                "the authority is rewritten both here and by a Host/:authority header operation",
            )
    check_route_destinations(route.route, f"{path}.route", report)
    if route.HasField("timeout"):
        check_duration(route.timeout, f"{path}.timeout", report)


def _check_action(route: HTTPRoute, path: str, report: Report, *, in_delegate: bool) -> None:
    has_route = len(route.route) > 0
    has_redirect = route.HasField("redirect")
    has_direct = route.HasField("direct_response")
    if route.HasField("delegate"):
        delegate = route.delegate
        if in_delegate:
            report.error(
                f"{path}.delegate",
                "a delegate VirtualService cannot delegate again (one level of delegation only)",
            )
        if not delegate.name:
            report.error(f"{path}.delegate.name", "delegate needs the name of a VirtualService")
        elif not is_dns_subdomain(delegate.name):
            report.error(
                f"{path}.delegate.name", f"{delegate.name!r} is not a valid VirtualService name"
            )
        if delegate.namespace and not is_dns_label(delegate.namespace):
            report.error(
                f"{path}.delegate.namespace",
                f"{delegate.namespace!r} is not a namespace name",
            )
        for present, field in (
            (has_route, "route"),
            (has_redirect, "redirect"),
            (has_direct, "directResponse"),
        ):
            if present:
                report.error(f"{path}.{field}", f"a route with delegate must not also set {field}")
        return
    if has_redirect and has_route:
        report.error(f"{path}.redirect", "redirect and route are mutually exclusive")
    if has_redirect and route.HasField("fault"):
        report.error(f"{path}.fault", "fault injection does not apply to a redirect")
    if has_redirect and route.HasField("rewrite"):
        report.error(f"{path}.rewrite", "rewrite does not apply to a redirect")
    if has_direct and has_route:
        report.error(f"{path}.directResponse", "directResponse and route are mutually exclusive")
    if has_direct and has_redirect:
        report.error(f"{path}.directResponse", "directResponse and redirect are mutually exclusive")
    if not (has_route or has_redirect or has_direct):
        report.error(path, "an HTTP route needs one of route, redirect, directResponse or delegate")


def _check_mirrors(route: HTTPRoute, path: str, report: Report) -> None:
    if route.HasField("mirror_percent"):
        report.warn(f"{path}.mirrorPercent", "mirrorPercent is deprecated; use mirrorPercentage")
        if route.mirror_percent.value > 100:
            report.error(
                f"{path}.mirrorPercent",
                f"mirror percentage {route.mirror_percent.value} must be in 0..100",
            )
    if route.HasField("mirror_percentage"):
        value = route.mirror_percentage.value
        if not 0 <= value <= 100:
            report.error(
                f"{path}.mirrorPercentage.value", f"mirror percentage {value:g} must be in 0..100"
            )
    if route.HasField("mirror"):
        check_destination(route.mirror, f"{path}.mirror", report)
    for index, mirror in enumerate(route.mirrors):
        item = f"{path}.mirrors[{index}]"
        if not mirror.HasField("destination"):
            report.error(f"{item}.destination", "mirror destination is required")
        else:
            check_destination(mirror.destination, f"{item}.destination", report)
        if mirror.HasField("percentage"):
            check_fractional_percent(mirror.percentage.value, f"{item}.percentage.value", report)


def _check_redirect(redirect: HTTPRedirect, path: str, report: Report) -> None:
    port_kind = redirect.WhichOneof("redirect_port")
    if not (
        redirect.uri
        or redirect.authority
        or redirect.scheme
        or redirect.prefix_rewrite
        or port_kind is not None
    ):
        report.error(path, "redirect must set at least one of uri, authority, scheme or port")
    if redirect.uri and redirect.prefix_rewrite:
        report.error(f"{path}.prefixRewrite", "uri and prefixRewrite are mutually exclusive")
    if redirect.redirect_code and redirect.redirect_code not in REDIRECT_CODES:
        report.error(
            f"{path}.redirectCode",
            f"redirect code {redirect.redirect_code} is not one of 301, 302, 303, 307, 308",
        )
    if redirect.scheme and redirect.scheme not in ("http", "https"):
        report.error(
            f"{path}.scheme", f"redirect scheme {redirect.scheme!r} must be 'http' or 'https'"
        )
    if port_kind == "port":
        check_port_number(redirect.port, f"{path}.port", report)


def _check_direct_response(response: HTTPDirectResponse, path: str, report: Report) -> None:
    check_http_status(response.status, f"{path}.status", report)
    if not response.HasField("body"):
        return
    kind = response.body.WhichOneof("specifier")
    size = 0
    if kind == "string":
        size = len(response.body.string.encode())
    elif kind == "bytes":
        size = len(response.body.bytes)
    if size > DIRECT_RESPONSE_MAX_BYTES:
        report.error(f"{path}.body", f"direct response body is {size} bytes; at most 1 MiB")
    elif size > DIRECT_RESPONSE_WARN_BYTES:
        report.warn(
            f"{path}.body", f"direct response body is {size} bytes; large bodies slow every push"
        )


def _check_rewrite(rewrite: HTTPRewrite, path: str, report: Report) -> None:
    has_regex = rewrite.HasField("uri_regex_rewrite")
    if rewrite.uri and has_regex:
        report.error(path, "uri and uriRegexRewrite are mutually exclusive")
    if not (rewrite.uri or has_regex or rewrite.authority):
        report.error(path, "rewrite must set uri, uriRegexRewrite or authority")
    if has_regex:
        regex_rewrite = rewrite.uri_regex_rewrite
        if not regex_rewrite.match or not regex_rewrite.rewrite:
            report.error(f"{path}.uriRegexRewrite", "uriRegexRewrite needs both match and rewrite")
        if regex_rewrite.match:
            check_regex(regex_rewrite.match, f"{path}.uriRegexRewrite.match", report)
