"""Validation of the policies an HTTP route carries: timeouts, retries, fault injection,
redirects, direct responses, rewrites, mirrors, CORS and header operations."""

from __future__ import annotations

from typing import Any

import pytest

from .checking import assert_error, assert_no_errors, assert_warning
from .http_specs import action, check, match, route

INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    # timeouts and retries
    ("timeout-zero", route(timeout="0s"), "spec.http[0].timeout", "at least 1ms"),
    (
        "timeout-sub-millisecond",
        route(timeout="0.0015s"),
        "spec.http[0].timeout",
        "whole number of milliseconds",
    ),
    (
        "per-try-timeout-zero",
        route(retries={"attempts": 2, "perTryTimeout": "0s"}),
        "spec.http[0].retries.perTryTimeout",
        "at least 1ms",
    ),
    (
        "backoff-zero",
        route(retries={"attempts": 2, "backoff": "0s"}),
        "spec.http[0].retries.backoff",
        "at least 1ms",
    ),
    (
        "negative-attempts",
        route(retries={"attempts": -1}),
        "spec.http[0].retries.attempts",
        "must not be negative",
    ),
    (
        "zero-attempts-with-policy",
        route(retries={"attempts": 0, "retryOn": "5xx"}),
        "spec.http[0].retries.attempts",
        "disables retries",
    ),
    (
        "retry-on-unknown",
        route(retries={"attempts": 1, "retryOn": "5xx,sometimes"}),
        "spec.http[0].retries.retryOn",
        "'sometimes' is not an Envoy retry condition",
    ),
    (
        "retry-on-bad-status",
        route(retries={"attempts": 1, "retryOn": "700"}),
        "spec.http[0].retries.retryOn",
        "'700' is not",
    ),
    # fault injection
    ("fault-empty", route(fault={}), "spec.http[0].fault", "needs a delay, an abort, or both"),
    (
        "abort-status-high",
        route(fault={"abort": {"httpStatus": 700}}),
        "spec.http[0].fault.abort.httpStatus",
        "HTTP status 700 must be in 200..599",
    ),
    (
        "abort-status-low",
        route(fault={"abort": {"httpStatus": 100}}),
        "spec.http[0].fault.abort.httpStatus",
        "must be in 200..599",
    ),
    (
        "abort-grpc-unknown",
        route(fault={"abort": {"grpcStatus": "BROKEN"}}),
        "spec.http[0].fault.abort.grpcStatus",
        "not a gRPC status code name",
    ),
    (
        "abort-http2",
        route(fault={"abort": {"http2Error": "REFUSED_STREAM"}}),
        "spec.http[0].fault.abort.http2Error",
        "not supported",
    ),
    (
        "abort-percentage",
        route(fault={"abort": {"httpStatus": 500, "percentage": {"value": -1}}}),
        "spec.http[0].fault.abort.percentage.value",
        "must be 0 or in 0.0001..100",
    ),
    (
        "delay-percentage",
        route(fault={"delay": {"fixedDelay": "1s", "percentage": {"value": 150}}}),
        "spec.http[0].fault.delay.percentage.value",
        "percentage 150",
    ),
    (
        "delay-percentage-too-fine",
        route(fault={"delay": {"fixedDelay": "1s", "percentage": {"value": 0.00001}}}),
        "spec.http[0].fault.delay.percentage.value",
        "0.0001..100",
    ),
    (
        "delay-zero",
        route(fault={"delay": {"fixedDelay": "0s"}}),
        "spec.http[0].fault.delay.fixedDelay",
        "at least 1ms",
    ),
    (
        "delay-exponential",
        route(fault={"delay": {"exponentialDelay": "1s"}}),
        "spec.http[0].fault.delay.exponentialDelay",
        "not supported",
    ),
    (
        "delay-deprecated-percent-range",
        route(fault={"delay": {"fixedDelay": "1s", "percent": 150}}),
        "spec.http[0].fault.delay.percent",
        "percentage 150 must be in 0..100",
    ),
    # redirect and direct response
    (
        "redirect-code",
        action(redirect={"uri": "/x", "redirectCode": 305}),
        "spec.http[0].redirect.redirectCode",
        "305 is not one of 301, 302, 303, 307, 308",
    ),
    (
        "redirect-empty",
        action(redirect={"redirectCode": 302}),
        "spec.http[0].redirect",
        "at least one of uri, authority, scheme or port",
    ),
    (
        "redirect-scheme",
        action(redirect={"scheme": "ftp"}),
        "spec.http[0].redirect.scheme",
        "must be 'http' or 'https'",
    ),
    (
        "redirect-port",
        action(redirect={"port": 70000}),
        "spec.http[0].redirect.port",
        "must be in 1..65535",
    ),
    (
        "redirect-uri-and-prefix",
        action(redirect={"uri": "/a", "prefixRewrite": "/b"}),
        "spec.http[0].redirect.prefixRewrite",
        "mutually exclusive",
    ),
    (
        "direct-response-status",
        action(directResponse={"status": 600}),
        "spec.http[0].directResponse.status",
        "HTTP status 600",
    ),
    (
        "direct-response-no-status",
        action(directResponse={"body": {"string": "hi"}}),
        "spec.http[0].directResponse.status",
        "HTTP status 0",
    ),
    (
        "direct-response-huge-body",
        action(directResponse={"status": 200, "body": {"string": "x" * (1024 * 1024 + 1)}}),
        "spec.http[0].directResponse.body",
        "at most 1 MiB",
    ),
    # rewrite
    (
        "rewrite-uri-and-regex",
        route(rewrite={"uri": "/a", "uriRegexRewrite": {"match": "^/b", "rewrite": "/c"}}),
        "spec.http[0].rewrite",
        "uri and uriRegexRewrite are mutually exclusive",
    ),
    ("rewrite-empty", route(rewrite={}), "spec.http[0].rewrite", "must set uri"),
    (
        "regex-rewrite-incomplete",
        route(rewrite={"uriRegexRewrite": {"match": "^/b"}}),
        "spec.http[0].rewrite.uriRegexRewrite",
        "needs both match and rewrite",
    ),
    (
        "regex-rewrite-bad-regex",
        route(rewrite={"uriRegexRewrite": {"match": "(?=x)", "rewrite": "/"}}),
        "spec.http[0].rewrite.uriRegexRewrite.match",
        "not valid RE2",
    ),
    (
        "authority-rewritten-twice",
        route(rewrite={"authority": "a"}, headers={"request": {"set": {":authority": "b"}}}),
        "spec.http[0].rewrite.authority",
        "rewritten both here and by a Host/:authority header",
    ),
    # mirrors
    (
        "mirror-percentage",
        route(mirror={"host": "shadow"}, mirrorPercentage={"value": 150}),
        "spec.http[0].mirrorPercentage.value",
        "must be in 0..100",
    ),
    (
        "mirror-without-host",
        route(mirror={"subset": "v1"}),
        "spec.http[0].mirror.host",
        "destination host is required",
    ),
    (
        "mirrors-percentage",
        route(mirrors=[{"destination": {"host": "shadow"}, "percentage": {"value": 200}}]),
        "spec.http[0].mirrors[0].percentage.value",
        "percentage 200",
    ),
    (
        "mirrors-without-destination",
        route(mirrors=[{"percentage": {"value": 5}}]),
        "spec.http[0].mirrors[0].destination",
        "mirror destination is required",
    ),
    (
        "mirror-percent-deprecated-range",
        route(mirror={"host": "shadow"}, mirrorPercent=150),
        "spec.http[0].mirrorPercent",
        "must be in 0..100",
    ),
    # CORS
    (
        "cors-method",
        route(corsPolicy={"allowMethods": ["FETCH"]}),
        "spec.http[0].corsPolicy.allowMethods[0]",
        "'FETCH' is not an HTTP method",
    ),
    (
        "cors-max-age-fraction",
        route(corsPolicy={"maxAge": "1.5s"}),
        "spec.http[0].corsPolicy.maxAge",
        "whole number of seconds",
    ),
    (
        "cors-max-age-zero",
        route(corsPolicy={"maxAge": "0s"}),
        "spec.http[0].corsPolicy.maxAge",
        "at least 1ms",
    ),
    (
        "cors-empty-origin",
        route(corsPolicy={"allowOrigins": [{"exact": ""}]}),
        "spec.http[0].corsPolicy.allowOrigins[0]",
        "needs a non-empty exact, prefix or regex",
    ),
    (
        "cors-origin-regex",
        route(corsPolicy={"allowOrigins": [{"regex": "(?=a)"}]}),
        "spec.http[0].corsPolicy.allowOrigins[0].regex",
        "not valid RE2",
    ),
    (
        "cors-allow-header",
        route(corsPolicy={"allowHeaders": ["x header"]}),
        "spec.http[0].corsPolicy.allowHeaders[0]",
        "may contain only letters",
    ),
    # header operations
    (
        "set-pseudo-header",
        route(headers={"request": {"set": {":path": "/x"}}}),
        "spec.http[0].headers.request.set[:path]",
        "pseudo-header ':path' cannot be modified",
    ),
    (
        "remove-host",
        route(headers={"request": {"remove": ["Host"]}}),
        "spec.http[0].headers.request.remove[0]",
        "'Host' cannot be removed or set here",
    ),
    (
        "response-host",
        route(headers={"response": {"set": {"host": "x"}}}),
        "spec.http[0].headers.response.set[host]",
        "cannot be removed or set here",
    ),
    (
        "header-value-newline",
        route(headers={"request": {"add": {"x-a": "b\r\nx-injected: 1"}}}),
        "spec.http[0].headers.request.add[x-a]",
        "control characters",
    ),
    (
        "header-name-space",
        route(headers={"response": {"add": {"x a": "b"}}}),
        "spec.http[0].headers.response.add[x a]",
        "not allowed in HTTP",
    ),
    (
        "remove-empty-name",
        route(headers={"response": {"remove": [""]}}),
        "spec.http[0].headers.response.remove[0]",
        "must not be empty",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_http_route_policies(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(check(spec), path, fragment)


WARNINGS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "mirror-percent-deprecated",
        route(mirror={"host": "shadow"}, mirrorPercent=20),
        "spec.http[0].mirrorPercent",
        "deprecated; use mirrorPercentage",
    ),
    (
        "delay-percent-deprecated",
        route(fault={"delay": {"fixedDelay": "1s", "percent": 20}}),
        "spec.http[0].fault.delay.percent",
        "deprecated; use percentage",
    ),
    (
        "allow-origin-deprecated",
        route(corsPolicy={"allowOrigin": ["https://a.example"]}),
        "spec.http[0].corsPolicy.allowOrigin",
        "deprecated; use allowOrigins",
    ),
    (
        "uppercase-header-match",
        match(headers={"X-User": {"exact": "a"}}),
        "spec.http[0].match[0].headers[X-User]",
        "should be lowercase",
    ),
    (
        "abort-without-type",
        route(fault={"abort": {"percentage": {"value": 1}}}),
        "spec.http[0].fault.abort",
        "has no effect",
    ),
    (
        "delay-without-duration",
        route(fault={"delay": {"percentage": {"value": 1}}}),
        "spec.http[0].fault.delay",
        "has no effect",
    ),
    (
        "large-direct-response",
        action(directResponse={"status": 200, "body": {"string": "x" * (200 * 1024)}}),
        "spec.http[0].directResponse.body",
        "large bodies",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [case[1:] for case in WARNINGS],
    ids=[case[0] for case in WARNINGS],
)
def test_http_route_warnings(spec: dict[str, Any], path: str, fragment: str) -> None:
    report = check(spec)
    assert_no_errors(report)
    assert_warning(report, path, fragment)
