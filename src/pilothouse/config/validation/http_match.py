"""HTTP match conditions of VirtualService routes (HTTPMatchRequest and StringMatch)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import (
    HTTPMatchRequest,
    StringMatch,
)
from pilothouse.config.validation.headers import check_match_header_name, is_jwt_claim
from pilothouse.config.validation.hosts import is_dns_label
from pilothouse.config.validation.labels import check_labels
from pilothouse.config.validation.ports import check_port_number
from pilothouse.config.validation.regex import check_regex
from pilothouse.config.validation.report import Report

GatewayRefCheck = Callable[[Collection[str], str, Report], None]

_PREFIX_AND_REGEX = frozenset({"prefix", "regex"})
_ALL_KINDS = frozenset({"exact", "prefix", "regex"})
_REGEX = frozenset({"regex"})


def check_string_match(
    match: StringMatch,
    path: str,
    report: Report,
    *,
    non_empty: frozenset[str] = _PREFIX_AND_REGEX,
    delegating: bool = False,
) -> None:
    """Check a StringMatch: kinds listed in ``non_empty`` need a value; regexes must be RE2.

    In delegating routes (root routes with ``delegate`` and routes of delegate
    VirtualServices) Istio cannot merge regex matches, so regexes are rejected there.
    """
    kind = match.WhichOneof("match_type")
    if kind is None:
        return
    value: str = getattr(match, kind)
    if kind in non_empty and not value:
        report.error(f"{path}.{kind}", f"{kind} match must not be empty")
        return
    if kind == "regex":
        if delegating:
            report.error(f"{path}.regex", "regex matches are not supported in delegating routes")
        else:
            check_regex(value, f"{path}.regex", report)


def check_http_match(
    match: HTTPMatchRequest,
    path: str,
    report: Report,
    *,
    delegating: bool,
    check_gateway_refs: GatewayRefCheck,
) -> None:
    if match.HasField("uri"):
        check_string_match(
            match.uri, f"{path}.uri", report, non_empty=_ALL_KINDS, delegating=delegating
        )
    for field in ("scheme", "method", "authority"):
        if match.HasField(field):
            check_string_match(
                getattr(match, field), f"{path}.{field}", report, delegating=delegating
            )
    _check_header_matches(
        match.headers, f"{path}.headers", report, delegating=delegating, star_means_present=False
    )
    _check_header_matches(
        match.without_headers,
        f"{path}.withoutHeaders",
        report,
        delegating=delegating,
        star_means_present=True,
    )
    for name in sorted(match.query_params):
        entry = f"{path}.queryParams[{name}]"
        if not name:
            report.error(entry, "query parameter name must not be empty")
        check_string_match(match.query_params[name], entry, report, delegating=delegating)
    if match.port:
        check_port_number(match.port, f"{path}.port", report)
    check_labels(match.source_labels, f"{path}.sourceLabels", report)
    check_gateway_refs(match.gateways, f"{path}.gateways", report)
    if match.source_namespace and not is_dns_label(match.source_namespace):
        report.error(
            f"{path}.sourceNamespace",
            f"source namespace {match.source_namespace!r} is not a namespace name",
        )


def _check_header_matches(
    headers: Mapping[str, StringMatch],
    path: str,
    report: Report,
    *,
    delegating: bool,
    star_means_present: bool,
) -> None:
    """An empty StringMatch is a presence match; so is ``regex: "*"`` in withoutHeaders."""
    for name in sorted(headers):
        entry = f"{path}[{name}]"
        check_match_header_name(name, entry, report)
        value = headers[name]
        if star_means_present and value.WhichOneof("match_type") == "regex" and value.regex == "*":
            continue
        check_string_match(value, entry, report, non_empty=_REGEX, delegating=delegating)


def claim_headers(match: HTTPMatchRequest) -> list[str]:
    """Names of JWT-claim pseudo headers a match uses (only gateways can route on claims)."""
    names = [*match.headers, *match.without_headers]
    return sorted(name for name in names if is_jwt_claim(name))
