"""Validation of one VirtualService HTTP route: its action, delegation, destinations, matches."""

from __future__ import annotations

from typing import Any

import pytest

from .checking import assert_clean, assert_error
from .http_specs import DEST, action, check, match, route


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            route(
                match=[
                    {
                        "uri": {"prefix": "/api"},
                        "method": {"exact": "GET"},
                        "scheme": {"exact": "https"},
                        "authority": {"regex": "api\\..*"},
                        "headers": {"x-user": {"regex": "^u-[0-9]+$"}, "x-present": {}},
                        "withoutHeaders": {"x-debug": {"regex": "*"}},
                        "queryParams": {"id": {"regex": "[0-9]+"}},
                        "port": 8080,
                        "sourceLabels": {"app": "web"},
                        "sourceNamespace": "frontend",
                        "gateways": ["mesh"],
                    }
                ]
            ),
            id="rich-match",
        ),
        pytest.param(
            route(
                fault={
                    "delay": {"fixedDelay": "0.5s", "percentage": {"value": 0.5}},
                    "abort": {"httpStatus": 503, "percentage": {"value": 10}},
                }
            ),
            id="fault-http",
        ),
        pytest.param(route(fault={"abort": {"grpcStatus": "UNAVAILABLE"}}), id="fault-grpc"),
        pytest.param(
            route(
                mirrors=[
                    {"destination": {"host": "shadow"}, "percentage": {"value": 5}},
                    {"destination": {"host": "audit", "subset": "v1"}},
                ]
            ),
            id="mirrors",
        ),
        pytest.param(
            route(
                corsPolicy={
                    "allowOrigins": [{"exact": "https://a.example"}, {"regex": "https://.*\\.b"}],
                    "allowMethods": ["GET", "POST", "OPTIONS"],
                    "allowHeaders": ["content-type", "*"],
                    "exposeHeaders": ["x-request-id"],
                    "maxAge": "86400s",
                    "allowCredentials": True,
                }
            ),
            id="cors",
        ),
        pytest.param(
            route(
                retries={
                    "attempts": 2,
                    "perTryTimeout": "0.25s",
                    "retryOn": "gateway-error, connect-failure,retriable-status-codes,503",
                    "backoff": "0.1s",
                }
            ),
            id="retries",
        ),
        pytest.param(route(retries={"attempts": 0}), id="retries-disabled"),
        pytest.param(
            route(rewrite={"uri": "/v2", "authority": "reviews-v2"}, timeout="15s"),
            id="rewrite",
        ),
        pytest.param(
            route(
                headers={
                    "request": {"set": {"host": "internal.example"}, "remove": ["cookie"]},
                    "response": {"add": {"cache-control": "no-store"}, "remove": ["server"]},
                }
            ),
            id="header-operations",
        ),
        pytest.param(
            action(redirect={"authority": "new.example.com", "port": 8443, "scheme": "https"}),
            id="redirect-port",
        ),
        pytest.param(action(redirect={"derivePort": "FROM_REQUEST_PORT"}), id="redirect-derive"),
        pytest.param(action(redirect={"prefixRewrite": "/new/"}), id="redirect-prefix"),
        pytest.param(
            action(directResponse={"status": 503, "body": {"bytes": "b2ZmbGluZQ=="}}),
            id="direct-response",
        ),
    ],
)
def test_valid_http_routes(spec: dict[str, Any]) -> None:
    assert_clean(check(spec))


ROOT_DELEGATE = {"name": "reviews-routes"}

INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    # action
    ("no-action", action(name="empty"), "spec.http[0]", "needs one of route, redirect"),
    (
        "redirect-and-route",
        route(redirect={"uri": "/x"}),
        "spec.http[0].redirect",
        "redirect and route are mutually exclusive",
    ),
    (
        "direct-response-and-route",
        route(directResponse={"status": 200}),
        "spec.http[0].directResponse",
        "directResponse and route are mutually exclusive",
    ),
    (
        "direct-response-and-redirect",
        action(redirect={"uri": "/x"}, directResponse={"status": 200}),
        "spec.http[0].directResponse",
        "directResponse and redirect are mutually exclusive",
    ),
    (
        "redirect-and-fault",
        action(redirect={"uri": "/x"}, fault={"abort": {"httpStatus": 500}}),
        "spec.http[0].fault",
        "does not apply to a redirect",
    ),
    (
        "redirect-and-rewrite",
        action(redirect={"uri": "/x"}, rewrite={"uri": "/y"}),
        "spec.http[0].rewrite",
        "does not apply to a redirect",
    ),
    # delegation
    (
        "delegate-and-route",
        route(delegate=ROOT_DELEGATE),
        "spec.http[0].route",
        "with delegate must not also set route",
    ),
    (
        "delegate-and-redirect",
        action(delegate=ROOT_DELEGATE, redirect={"uri": "/x"}),
        "spec.http[0].redirect",
        "must not also set redirect",
    ),
    (
        "delegate-and-direct-response",
        action(delegate=ROOT_DELEGATE, directResponse={"status": 200}),
        "spec.http[0].directResponse",
        "must not also set directResponse",
    ),
    (
        "delegate-without-name",
        action(delegate={"namespace": "prod"}),
        "spec.http[0].delegate.name",
        "needs the name of a VirtualService",
    ),
    (
        "delegate-bad-name",
        action(delegate={"name": "Reviews_Routes"}),
        "spec.http[0].delegate.name",
        "not a valid VirtualService name",
    ),
    (
        "delegate-bad-namespace",
        action(delegate={"name": "r", "namespace": "prod/x"}),
        "spec.http[0].delegate.namespace",
        "not a namespace name",
    ),
    (
        "delegate-in-delegate",
        {"http": [{"delegate": ROOT_DELEGATE}]},
        "spec.http[0].delegate",
        "one level of delegation",
    ),
    (
        "regex-in-root-route",
        action(delegate=ROOT_DELEGATE, match=[{"uri": {"regex": "/a.*"}}]),
        "spec.http[0].match[0].uri.regex",
        "not supported in delegating routes",
    ),
    (
        "regex-in-delegate-vs",
        {"http": [{"match": [{"headers": {"x-a": {"regex": "b"}}}], "route": [DEST]}]},
        "spec.http[0].match[0].headers[x-a].regex",
        "not supported in delegating routes",
    ),
    # destinations and weights
    (
        "negative-weight",
        route(route=[{**DEST, "weight": 110}, {**DEST, "weight": -10}]),
        "spec.http[0].route[1].weight",
        "weight -10 must not be negative",
    ),
    (
        "weights-zero",
        route(route=[DEST, DEST]),
        "spec.http[0].route",
        "must add up to 100 (they add up to 0)",
    ),
    (
        "missing-destination",
        route(route=[{"weight": 100}]),
        "spec.http[0].route[0].destination",
        "destination is required",
    ),
    (
        "destination-without-host",
        route(route=[{"destination": {"subset": "v1"}}]),
        "spec.http[0].route[0].destination.host",
        "destination host is required",
    ),
    (
        "destination-star",
        route(route=[{"destination": {"host": "*"}}]),
        "spec.http[0].route[0].destination.host",
        "bare wildcard",
    ),
    (
        "destination-bad-host",
        route(route=[{"destination": {"host": "reviews:9080"}}]),
        "spec.http[0].route[0].destination.host",
        "not a valid DNS name",
    ),
    (
        "destination-subset",
        route(route=[{"destination": {"host": "reviews", "subset": "v1.0"}}]),
        "spec.http[0].route[0].destination.subset",
        "not a DNS-1123 label",
    ),
    (
        "destination-port",
        route(route=[{"destination": {"host": "reviews", "port": {"number": 70000}}}]),
        "spec.http[0].route[0].destination.port.number",
        "must be in 1..65535",
    ),
    (
        "destination-header-operation",
        route(route=[{**DEST, "headers": {"response": {"set": {":status": "200"}}}}]),
        "spec.http[0].route[0].headers.response.set[:status]",
        "pseudo-header",
    ),
    # matches
    (
        "regex-lookahead",
        match(uri={"regex": "/api(?!/internal)"}),
        "spec.http[0].match[0].uri.regex",
        "not valid RE2",
    ),
    (
        "regex-too-long",
        match(uri={"regex": "a" * 1025}),
        "spec.http[0].match[0].uri.regex",
        "at most 1024",
    ),
    (
        "header-regex",
        match(headers={"x-user": {"regex": "(unclosed"}}),
        "spec.http[0].match[0].headers[x-user].regex",
        "not valid RE2",
    ),
    (
        "without-header-regex",
        match(withoutHeaders={"x-user": {"regex": "a{2,1}"}}),
        "spec.http[0].match[0].withoutHeaders[x-user].regex",
        "not valid RE2",
    ),
    (
        "uri-empty-prefix",
        match(uri={"prefix": ""}),
        "spec.http[0].match[0].uri.prefix",
        "prefix match must not be empty",
    ),
    (
        "uri-empty-exact",
        match(uri={"exact": ""}),
        "spec.http[0].match[0].uri.exact",
        "exact match must not be empty",
    ),
    (
        "uri-empty-regex",
        match(uri={"regex": ""}),
        "spec.http[0].match[0].uri.regex",
        "regex match must not be empty",
    ),
    (
        "method-empty-prefix",
        match(method={"prefix": ""}),
        "spec.http[0].match[0].method.prefix",
        "must not be empty",
    ),
    (
        "authority-regex",
        match(authority={"regex": "(?<=a)b"}),
        "spec.http[0].match[0].authority.regex",
        "not valid RE2",
    ),
    (
        "query-param-empty-prefix",
        match(queryParams={"id": {"prefix": ""}}),
        "spec.http[0].match[0].queryParams[id].prefix",
        "must not be empty",
    ),
    (
        "header-name-space",
        match(headers={"x user": {"exact": "a"}}),
        "spec.http[0].match[0].headers[x user]",
        "may contain only letters",
    ),
    (
        "header-name-empty",
        match(headers={"": {"exact": "a"}}),
        "spec.http[0].match[0].headers[]",
        "must not be empty",
    ),
    (
        "match-port",
        match(port=70000),
        "spec.http[0].match[0].port",
        "must be in 1..65535",
    ),
    (
        "match-source-labels",
        match(sourceLabels={"app": "*"}),
        "spec.http[0].match[0].sourceLabels[app]",
        "label value '*' is invalid",
    ),
    (
        "match-gateways",
        match(gateways=["ns/bad_gw"]),
        "spec.http[0].match[0].gateways[0]",
        "not a gateway name",
    ),
    (
        "match-source-namespace",
        match(sourceNamespace="a.b"),
        "spec.http[0].match[0].sourceNamespace",
        "not a namespace name",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_http_routes(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(check(spec), path, fragment)


def test_a_single_destination_needs_no_weight() -> None:
    assert_clean(check(route(route=[{"destination": {"host": "reviews"}, "weight": 0}])))


def test_errors_carry_the_exact_weight_path() -> None:
    report = check(route(route=[DEST, {**DEST, "weight": -5}, {**DEST, "weight": 105}]))
    weight_errors = [f.path for f in report.errors]
    assert weight_errors == ["spec.http[0].route[1].weight"]
