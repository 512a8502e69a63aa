"""HTTP header names and values: in matches, in header operations, in CORS lists."""

from __future__ import annotations

import re

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import Headers
from pilothouse.config.validation.report import Report

# Istio's rule for header names it matches on or names in CORS lists.
_HEADER_NAME = re.compile(r"[-_A-Za-z0-9]+")
# RFC 9110 token characters, optionally a leading ':' for pseudo-headers.
_HEADER_TOKEN = re.compile(r":?[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
JWT_CLAIM_PREFIX = "@request.auth.claims"


def header_name_problem(name: str) -> str | None:
    if not name:
        return "header name must not be empty"
    if _HEADER_NAME.fullmatch(name) is None:
        return f"header name {name!r} may contain only letters, digits, '-' and '_'"
    return None


def is_jwt_claim(name: str) -> bool:
    """``@request.auth.claims.<name>`` or ``@request.auth.claims[<name>]...``: claim routing."""
    rest = name.removeprefix(JWT_CLAIM_PREFIX)
    return rest != name and len(rest) > 1 and rest[0] in ".["


def check_match_header_name(name: str, path: str, report: Report) -> None:
    """A header name used in a match: a valid name (or a JWT claim); lowercase recommended."""
    if is_jwt_claim(name):
        return
    problem = header_name_problem(name)
    if problem is not None:
        report.error(path, problem)
    elif name != name.lower():
        report.warn(
            path,
            f"header name {name!r} should be lowercase (header names are matched "
            "case-insensitively)",
        )


def check_header_value(value: str, path: str, report: Report) -> None:
    if _CONTROL_CHARS.search(value):
        report.error(path, "header value must not contain control characters")


def check_header_operations(
    headers: Headers, path: str, report: Report, *, authority_in_request: bool = True
) -> None:
    """Check ``headers.request`` / ``headers.response`` set, add and remove operations.

    Pseudo-headers (``:path``…) cannot be changed. ``Host``/``:authority`` may be set or
    added on requests (it rewrites the authority) but never removed or put on responses.
    """
    for side, ops, is_request in (
        ("request", headers.request, True),
        ("response", headers.response, False),
    ):
        if not (headers.HasField(side)):
            continue
        side_path = f"{path}.{side}"
        for op_name, values in (("set", ops.set), ("add", ops.add)):
            for name in sorted(values):
                entry = f"{side_path}.{op_name}[{name}]"
                _check_operation_name(
                    name, entry, report, may_be_authority=is_request and authority_in_request
                )
                check_header_value(values[name], entry, report)
        for index, name in enumerate(ops.remove):
            _check_operation_name(
                name, f"{side_path}.remove[{index}]", report, may_be_authority=False
            )


def _check_operation_name(name: str, path: str, report: Report, *, may_be_authority: bool) -> None:
    if not name:
        report.error(path, "header name must not be empty")
        return
    lowered = name.lower()
    if lowered in ("host", ":authority"):
        if not may_be_authority:
            report.error(path, f"header {name!r} cannot be removed or set here")
        return
    if name.startswith(":"):
        report.error(path, f"pseudo-header {name!r} cannot be modified")
        return
    if _HEADER_TOKEN.fullmatch(name) is None:
        report.error(path, f"header name {name!r} contains characters not allowed in HTTP")


def authority_header_value(headers: Headers) -> str | None:
    """The authority a route's request header operations set, if any."""
    for values in (headers.request.set, headers.request.add):
        for name in values:
            if name.lower() in ("host", ":authority"):
                return values[name]
    return None
