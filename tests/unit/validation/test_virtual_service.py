"""VirtualService validation: hosts, gateways, delegation, TLS and TCP routes, reachability."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import VirtualService
from pilothouse.config.validation import Report, validate_virtual_service

from .checking import assert_clean, assert_error, assert_no_errors, assert_warning, run

BOOKINFO: dict[str, Any] = {
    "hosts": ["reviews", "reviews.bookinfo.svc.cluster.local"],
    "http": [
        {
            "name": "jason",
            "match": [
                {"headers": {"end-user": {"exact": "jason"}}, "uri": {"prefix": "/reviews"}},
                {"queryParams": {"canary": {"exact": "1"}}, "ignoreUriCase": True},
            ],
            "route": [{"destination": {"host": "reviews", "subset": "v2"}}],
            "timeout": "10s",
            "retries": {"attempts": 3, "perTryTimeout": "2s", "retryOn": "5xx,reset,503"},
        },
        {
            "name": "default",
            "route": [
                {"destination": {"host": "reviews", "subset": "v1"}, "weight": 75},
                {
                    "destination": {"host": "reviews", "subset": "v3", "port": {"number": 9080}},
                    "weight": 25,
                    "headers": {"response": {"set": {"x-served-by": "v3"}}},
                },
            ],
            "headers": {"request": {"add": {"x-route": "default"}, "remove": ["x-debug"]}},
        },
    ],
}

EDGE: dict[str, Any] = {
    "hosts": ["*"],
    "gateways": ["istio-system/public-gateway", "edge-gw"],
    "http": [
        {
            "match": [{"uri": {"regex": "^/api/v[0-9]+/.*"}, "gateways": ["edge-gw"]}],
            "rewrite": {"uriRegexRewrite": {"match": "^/api/v[0-9]+/", "rewrite": "/"}},
            "route": [{"destination": {"host": "api.backend.svc.cluster.local"}}],
        },
        {"match": [{"uri": {"exact": "/old"}}], "redirect": {"uri": "/new", "redirectCode": 308}},
        {"directResponse": {"status": 404, "body": {"string": "not here"}}},
    ],
}

TLS_PASSTHROUGH: dict[str, Any] = {
    "hosts": ["*.example.com"],
    "gateways": ["mesh", "edge/gw"],
    "tls": [
        {
            "match": [{"sniHosts": ["login.example.com"], "port": 443}],
            "route": [{"destination": {"host": "login.example.com", "port": {"number": 443}}}],
        },
        {
            "match": [{"sniHosts": ["*.shop.example.com"], "destinationSubnets": ["10.0.0.0/8"]}],
            "route": [{"destination": {"host": "shop.example.com"}}],
        },
    ],
}

TCP_SPLIT: dict[str, Any] = {
    "hosts": ["mysql.db.svc.cluster.local"],
    "tcp": [
        {
            "match": [{"port": 3306, "sourceLabels": {"app": "api"}, "sourceNamespace": "prod"}],
            "route": [
                {"destination": {"host": "mysql-primary"}, "weight": 80},
                {"destination": {"host": "mysql-replica"}, "weight": 20},
            ],
        },
        {"route": [{"destination": {"host": "mysql-primary"}}]},
    ],
}

DELEGATE: dict[str, Any] = {
    "http": [
        {"match": [{"uri": {"prefix": "/reviews/v2"}}], "route": [{"destination": {"host": "r2"}}]},
        {"route": [{"destination": {"host": "r1"}}]},
    ]
}

ROOT: dict[str, Any] = {
    "hosts": ["bookinfo.example.com"],
    "gateways": ["bookinfo-gw"],
    "http": [
        {
            "match": [{"uri": {"prefix": "/reviews"}}],
            "delegate": {"name": "reviews", "namespace": "prod"},
        },
        {"route": [{"destination": {"host": "productpage"}}]},
    ],
}

JWT_ROUTING: dict[str, Any] = {
    "hosts": ["api.example.com"],
    "gateways": ["edge/gw"],
    "http": [
        {
            "match": [{"headers": {"@request.auth.claims.group": {"exact": "admins"}}}],
            "route": [{"destination": {"host": "admin-api"}}],
        },
        {"route": [{"destination": {"host": "api"}}]},
    ],
}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(BOOKINFO, id="bookinfo"),
        pytest.param(EDGE, id="edge-gateway"),
        pytest.param(TLS_PASSTHROUGH, id="tls-sni"),
        pytest.param(TCP_SPLIT, id="tcp-split"),
        pytest.param(DELEGATE, id="delegate"),
        pytest.param(ROOT, id="root"),
        pytest.param(JWT_ROUTING, id="jwt-claims-on-gateway"),
        pytest.param({**BOOKINFO, "exportTo": ["."]}, id="export-private"),
        pytest.param(
            {"hosts": ["10.0.0.5"], "http": [{"route": [{"destination": {"host": "a"}}]}]},
            id="ip-host",
        ),
    ],
)
def test_valid_virtual_services(spec: dict[str, Any]) -> None:
    assert_clean(run(validate_virtual_service, VirtualService, spec))


def simple(**fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "hosts": ["reviews"],
        "http": [{"route": [{"destination": {"host": "reviews"}}]}],
    }
    spec.update(fields)
    return spec


def tls_route(**match: Any) -> dict[str, Any]:
    return {"match": [match], "route": [{"destination": {"host": "login.example.com"}}]}


INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("no-routes", {"hosts": ["reviews"]}, "spec", "needs http, tcp or tls"),
    ("bad-host", simple(hosts=["re_views"]), "spec.hosts[0]", "not a valid DNS name"),
    ("partial-wildcard-host", simple(hosts=["*views.com"]), "spec.hosts[0]", "whole first label"),
    ("star-host-mesh", simple(hosts=["*"]), "spec.hosts[0]", "allowed only when"),
    (
        "star-host-mesh-and-gateway",
        simple(hosts=["*"], gateways=["mesh", "gw"]),
        "spec.hosts[0]",
        "allowed only when",
    ),
    ("duplicate-host", simple(hosts=["a.com", "a.com"]), "spec.hosts[1]", "overlaps hosts[0]"),
    (
        "overlapping-wildcard",
        simple(hosts=["*.example.com", "api.example.com"]),
        "spec.hosts[1]",
        "duplicates or overlaps",
    ),
    (
        "gateway-bad-namespace",
        simple(gateways=["Bad_NS/gw"]),
        "spec.gateways[0]",
        "'Bad_NS' is not a namespace name",
    ),
    ("gateway-empty-name", simple(gateways=["prod/"]), "spec.gateways[0]", "must both be set"),
    ("gateway-bad-name", simple(gateways=["gw_1"]), "spec.gateways[0]", "not a valid gateway name"),
    (
        "gateway-bad-name-with-namespace",
        simple(gateways=["prod/gw.x"]),
        "spec.gateways[0]",
        "'gw.x' is not a gateway name",
    ),
    ("delegate-gateways", {**DELEGATE, "gateways": ["gw"]}, "spec.gateways", "is a delegate"),
    ("delegate-tcp", {**DELEGATE, "tcp": TCP_SPLIT["tcp"]}, "spec.tcp", "cannot have tcp"),
    ("delegate-tls", {**DELEGATE, "tls": TLS_PASSTHROUGH["tls"]}, "spec.tls", "cannot have tls"),
    ("export-bad", simple(exportTo=["no/slash"]), "spec.exportTo[0]", "not '.', '*'"),
    (
        "export-tilde",
        simple(exportTo=["~"]),
        "spec.exportTo[0]",
        "is not '.', '*' or a namespace name",
    ),
    (
        "tls-without-match",
        {"hosts": ["a.example.com"], "tls": [{"route": [{"destination": {"host": "a"}}]}]},
        "spec.tls[0].match",
        "at least one match",
    ),
    (
        "tls-match-without-sni",
        {"hosts": ["a.example.com"], "tls": [tls_route(port=443)]},
        "spec.tls[0].match[0].sniHosts",
        "at least one SNI host",
    ),
    (
        "sni-outside-hosts",
        {"hosts": ["*.example.com"], "tls": [tls_route(sniHosts=["login.other.com"])]},
        "spec.tls[0].match[0].sniHosts[0]",
        "not within any of the VirtualService hosts",
    ),
    (
        "sni-wider-than-host",
        {"hosts": ["login.example.com"], "tls": [tls_route(sniHosts=["*.example.com"])]},
        "spec.tls[0].match[0].sniHosts[0]",
        "not within",
    ),
    (
        "sni-invalid",
        {"hosts": ["*"], "gateways": ["gw"], "tls": [tls_route(sniHosts=["bad_sni"])]},
        "spec.tls[0].match[0].sniHosts[0]",
        "not a valid DNS name",
    ),
    (
        "tls-without-route",
        {"hosts": ["a.example.com"], "tls": [{"match": [{"sniHosts": ["a.example.com"]}]}]},
        "spec.tls[0].route",
        "needs a route",
    ),
    (
        "tls-destination-without-host",
        {
            "hosts": ["a.example.com"],
            "tls": [{"match": [{"sniHosts": ["a.example.com"]}], "route": [{"destination": {}}]}],
        },
        "spec.tls[0].route[0].destination.host",
        "destination host is required",
    ),
    (
        "tls-match-port",
        {"hosts": ["a.example.com"], "tls": [tls_route(sniHosts=["a.example.com"], port=70000)]},
        "spec.tls[0].match[0].port",
        "must be in 1..65535",
    ),
    (
        "tcp-without-route",
        {"hosts": ["db"], "tcp": [{"match": [{"port": 3306}]}]},
        "spec.tcp[0].route",
        "needs a route",
    ),
    (
        "tcp-match-port",
        {
            "hosts": ["db"],
            "tcp": [{"match": [{"port": 70000}], "route": [{"destination": {"host": "db"}}]}],
        },
        "spec.tcp[0].match[0].port",
        "must be in 1..65535",
    ),
    (
        "tcp-destination-subnet",
        {
            "hosts": ["db"],
            "tcp": [
                {
                    "match": [{"destinationSubnets": ["10.0.0.0/40"]}],
                    "route": [{"destination": {"host": "db"}}],
                }
            ],
        },
        "spec.tcp[0].match[0].destinationSubnets[0]",
        "not a valid CIDR block",
    ),
    (
        "tcp-source-subnet",
        {
            "hosts": ["db"],
            "tcp": [
                {"match": [{"sourceSubnet": "ten"}], "route": [{"destination": {"host": "db"}}]}
            ],
        },
        "spec.tcp[0].match[0].sourceSubnet",
        "not a valid IP address or CIDR",
    ),
    (
        "tcp-weights-zero",
        {
            "hosts": ["db"],
            "tcp": [
                {
                    "route": [
                        {"destination": {"host": "a"}, "weight": 0},
                        {"destination": {"host": "b"}, "weight": 0},
                    ]
                }
            ],
        },
        "spec.tcp[0].route",
        "must add up to 100 (they add up to 0)",
    ),
    (
        "tcp-negative-weight",
        {
            "hosts": ["db"],
            "tcp": [
                {
                    "route": [
                        {"destination": {"host": "a"}, "weight": 110},
                        {"destination": {"host": "b"}, "weight": -10},
                    ]
                }
            ],
        },
        "spec.tcp[0].route[1].weight",
        "must not be negative",
    ),
    (
        "tcp-source-namespace",
        {
            "hosts": ["db"],
            "tcp": [
                {
                    "match": [{"sourceNamespace": "prod_1"}],
                    "route": [{"destination": {"host": "db"}}],
                }
            ],
        },
        "spec.tcp[0].match[0].sourceNamespace",
        "not a namespace name",
    ),
    (
        "tcp-source-labels",
        {
            "hosts": ["db"],
            "tcp": [
                {
                    "match": [{"sourceLabels": {"app": "a b"}}],
                    "route": [{"destination": {"host": "db"}}],
                }
            ],
        },
        "spec.tcp[0].match[0].sourceLabels[app]",
        "label value 'a b' is invalid",
    ),
    (
        "weights-not-100",
        simple(
            http=[
                {
                    "route": [
                        {"destination": {"host": "a"}, "weight": 1},
                        {"destination": {"host": "b"}, "weight": 1},
                    ]
                }
            ]
        ),
        "spec.http[0].route",
        "must add up to 100 (they add up to 2)",
    ),
    (
        "jwt-claims-in-mesh",
        {**JWT_ROUTING, "gateways": []},
        "spec.http[0].match[0].headers[@request.auth.claims.group]",
        "only for VirtualServices bound to gateways",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_virtual_services(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(run(validate_virtual_service, VirtualService, spec), path, fragment)


def route_to(host: str, **fields: Any) -> dict[str, Any]:
    return {"route": [{"destination": {"host": host}}], **fields}


WARNINGS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "legacy-gateway-name",
        simple(gateways=["gw.istio-system"]),
        "spec.gateways[0]",
        "prefer istio-system/gw",
    ),
    (
        "rule-after-catch-all",
        simple(http=[route_to("a"), route_to("b", match=[{"uri": {"prefix": "/b"}}])]),
        "spec.http[1]",
        "rule 0 has no match and catches all",
    ),
    (
        "repeated-match",
        simple(
            http=[
                route_to("a", match=[{"uri": {"prefix": "/a"}}]),
                route_to("b", match=[{"uri": {"prefix": "/a"}, "name": "other"}, {"port": 8080}]),
            ]
        ),
        "spec.http[1].match[0]",
        "rule 0 has the same match",
    ),
    (
        "all-matches-repeated",
        simple(
            http=[
                route_to("a", match=[{"uri": {"prefix": "/a"}}]),
                route_to("b", match=[{"uri": {"prefix": "/a"}}]),
            ]
        ),
        "spec.http[1]",
        "all its matches are used by earlier rules",
    ),
    (
        "tcp-rule-after-catch-all",
        {"hosts": ["db"], "tcp": [route_to("a"), route_to("b", match=[{"port": 3306}])]},
        "spec.tcp[1]",
        "catches all",
    ),
    (
        "duplicate-route-name",
        simple(
            http=[
                route_to("a", name="r", match=[{"uri": {"prefix": "/a"}}]),
                route_to("b", name="r"),
            ]
        ),
        "spec.http[1].name",
        "'r' is already used by rule 0",
    ),
    (
        "sni-ip",
        {"hosts": ["*"], "gateways": ["gw"], "tls": [tls_route(sniHosts=["10.0.0.1"])]},
        "spec.tls[0].match[0].sniHosts[0]",
        "IP address",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [case[1:] for case in WARNINGS],
    ids=[case[0] for case in WARNINGS],
)
def test_virtual_service_warnings(spec: dict[str, Any], path: str, fragment: str) -> None:
    report = run(validate_virtual_service, VirtualService, spec)
    assert_no_errors(report)
    assert_warning(report, path, fragment)


def test_findings_name_the_report_object() -> None:
    report = Report(namespace="prod", name="reviews")
    validate_virtual_service(VirtualService(hosts=["reviews"]), report)
    assert [str(f) for f in report.errors] == [
        "spec: a VirtualService needs http, tcp or tls routes"
    ]
