"""CORS policies on HTTP routes."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import CorsPolicy
from pilothouse.config.validation.headers import header_name_problem
from pilothouse.config.validation.quantities import check_duration, duration_nanos
from pilothouse.config.validation.regex import check_regex
from pilothouse.config.validation.report import Report

HTTP_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"}
)


def check_cors(policy: CorsPolicy, path: str, report: Report) -> None:
    if policy.allow_origin:
        report.warn(f"{path}.allowOrigin", "allowOrigin is deprecated; use allowOrigins")
    for index, origin in enumerate(policy.allow_origins):
        item = f"{path}.allowOrigins[{index}]"
        kind = origin.WhichOneof("match_type")
        if kind is None or not getattr(origin, kind):
            report.error(item, "an allowed origin needs a non-empty exact, prefix or regex")
        elif kind == "regex":
            check_regex(origin.regex, f"{item}.regex", report)
    for index, method in enumerate(policy.allow_methods):
        if method not in HTTP_METHODS:
            report.error(
                f"{path}.allowMethods[{index}]",
                f"{method!r} is not an HTTP method ({', '.join(sorted(HTTP_METHODS))})",
            )
    for list_name, names in (
        ("allowHeaders", policy.allow_headers),
        ("exposeHeaders", policy.expose_headers),
    ):
        for index, name in enumerate(names):
            problem = None if name == "*" else header_name_problem(name)
            if problem is not None:
                report.error(f"{path}.{list_name}[{index}]", problem)
    if policy.HasField("max_age"):
        check_duration(policy.max_age, f"{path}.maxAge", report)
        if duration_nanos(policy.max_age) % 1_000_000_000:
            report.error(f"{path}.maxAge", "maxAge must be a whole number of seconds")
