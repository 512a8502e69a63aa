"""HTTPMatchRequest → RouteMatch: one route per match, in order; port, gateway, source filters."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.route.v3 import route_components_pb2 as rc_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.xds.builders.route import build_http_routes
from pilothouse.xds.builders.route_destination import service_resolver
from pilothouse.xds.builders.route_match import (
    is_catch_all,
    resolve_gateway_name,
    translate_match,
)

REVIEWS = "reviews.bookinfo.svc.cluster.local"


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def match_json(match: dict[str, Any] | None) -> dict[str, Any]:
    request = None if match is None else json_format.ParseDict(match, vs_pb2.HTTPMatchRequest())
    return as_dict(translate_match(request))


def routes(spec: dict[str, Any], **kwargs: Any) -> list[rc_pb2.Route]:
    spec = {"hosts": ["reviews"], **spec}
    options: dict[str, Any] = {"port": 9080, "gateway": None, "vs_name": "reviews"}
    options.update(kwargs)
    return build_http_routes(
        json_format.ParseDict(spec, vs_pb2.VirtualService()),
        "bookinfo",
        service_resolver({REVIEWS: [9080]}, current_port=9080),
        **options,
    )


def http(match: list[dict[str, Any]] | None = None, subset: str = "v1", **extra: Any) -> Any:
    route: dict[str, Any] = {"route": [{"destination": {"host": "reviews", "subset": subset}}]}
    if match is not None:
        route["match"] = match
    route.update(extra)
    return route


@pytest.mark.parametrize(
    ("match", "expected"),
    [
        pytest.param(None, {"prefix": "/"}, id="no-match-catch-all"),
        pytest.param({}, {"prefix": "/", "case_sensitive": True}, id="empty-match"),
        pytest.param(
            {"uri": {"exact": "/a"}}, {"path": "/a", "case_sensitive": True}, id="uri-exact"
        ),
        pytest.param(
            {"uri": {"prefix": "/a"}}, {"prefix": "/a", "case_sensitive": True}, id="uri-prefix"
        ),
        pytest.param(
            {"uri": {"regex": "/a/[0-9]+"}},
            {"safe_regex": {"regex": "/a/[0-9]+"}, "case_sensitive": True},
            id="uri-regex",
        ),
        pytest.param(
            {"uri": {"prefix": "/A"}, "ignoreUriCase": True},
            {"prefix": "/A", "case_sensitive": False},
            id="ignore-uri-case",
        ),
        pytest.param(
            {"headers": {"x-b": {"exact": "1"}, "x-a": {"prefix": "p"}, "x-c": {"regex": "r.*"}}},
            {
                "prefix": "/",
                "case_sensitive": True,
                "headers": [
                    {"name": "x-a", "string_match": {"prefix": "p"}},
                    {"name": "x-b", "string_match": {"exact": "1"}},
                    {"name": "x-c", "string_match": {"safe_regex": {"regex": "r.*"}}},
                ],
            },
            id="headers-sorted-by-name",
        ),
        pytest.param(
            {"headers": {"x-present": {}, "x-star": {"regex": "*"}}},
            {
                "prefix": "/",
                "case_sensitive": True,
                "headers": [
                    {"name": "x-present", "present_match": True},
                    {"name": "x-star", "present_match": True},
                ],
            },
            id="headers-presence",
        ),
        pytest.param(
            {"withoutHeaders": {"x-a": {"exact": "1"}, "x-b": {}}},
            {
                "prefix": "/",
                "case_sensitive": True,
                "headers": [
                    {
                        "name": "x-a",
                        "string_match": {"exact": "1"},
                        "invert_match": True,
                        "treat_missing_header_as_empty": True,
                    },
                    {"name": "x-b", "present_match": True, "invert_match": True},
                ],
            },
            id="without-headers",
        ),
        pytest.param(
            {
                "scheme": {"exact": "https"},
                "authority": {"prefix": "reviews"},
                "method": {"regex": "GET|HEAD"},
                "headers": {"z-last": {"exact": "1"}},
            },
            {
                "prefix": "/",
                "case_sensitive": True,
                "headers": [
                    {"name": "z-last", "string_match": {"exact": "1"}},
                    {"name": ":method", "string_match": {"safe_regex": {"regex": "GET|HEAD"}}},
                    {"name": ":authority", "string_match": {"prefix": "reviews"}},
                    {"name": ":scheme", "string_match": {"exact": "https"}},
                ],
            },
            id="pseudo-headers-after-headers",
        ),
        pytest.param(
            {"queryParams": {"b": {"regex": "[0-9]+"}, "a": {"exact": "x"}, "c": {}}},
            {
                "prefix": "/",
                "case_sensitive": True,
                "query_parameters": [
                    {"name": "a", "string_match": {"exact": "x"}},
                    {"name": "b", "string_match": {"safe_regex": {"regex": "[0-9]+"}}},
                    {"name": "c", "present_match": True},
                ],
            },
            id="query-params",
        ),
        pytest.param(
            {"queryParams": {"p": {"prefix": "ab"}}},
            {
                "prefix": "/",
                "case_sensitive": True,
                "query_parameters": [{"name": "p", "string_match": {"prefix": "ab"}}],
            },
            id="query-param-prefix-passed-on",
        ),
    ],
)
def test_route_match_translation(match: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    assert match_json(match) == expected


def test_route_one_route_per_match_in_order() -> None:
    built = routes(
        {
            "http": [
                http(
                    [
                        {"uri": {"prefix": "/a"}},
                        {"uri": {"exact": "/b"}},
                        {"headers": {"x": {"exact": "1"}}},
                    ],
                    subset="v1",
                ),
                http([{"uri": {"prefix": "/c"}}], subset="v2"),
            ]
        }
    )
    matches = [as_dict(route.match) for route in built]
    assert [m.get("prefix", m.get("path")) for m in matches] == ["/a", "/b", "/", "/c"]
    assert [route.route.cluster for route in built] == [
        f"outbound|9080|v1|{REVIEWS}",
        f"outbound|9080|v1|{REVIEWS}",
        f"outbound|9080|v1|{REVIEWS}",
        f"outbound|9080|v2|{REVIEWS}",
    ]


def test_route_nothing_after_a_catch_all() -> None:
    built = routes(
        {
            "http": [
                http([{"uri": {"prefix": "/a"}}, {"port": 9080}, {"uri": {"prefix": "/x"}}]),
                http(subset="v2"),
            ]
        }
    )
    assert [as_dict(route.match).get("prefix") for route in built] == ["/a", "/"]
    assert is_catch_all(built[-1].match)


def test_route_no_match_route_stops_processing() -> None:
    built = routes({"http": [http(subset="v1"), http([{"uri": {"prefix": "/late"}}], "v2")]})
    assert len(built) == 1
    assert built[0].match.prefix == "/"


@pytest.mark.parametrize(
    ("match", "port", "kept"),
    [
        pytest.param({"port": 9080}, 9080, True, id="same-port"),
        pytest.param({"port": 9090}, 9080, False, id="other-port"),
        pytest.param({}, 9090, True, id="no-port-any-listener"),
    ],
)
def test_route_match_port_filter(match: dict[str, Any], port: int, kept: bool) -> None:
    built = routes({"http": [http([{**match, "uri": {"prefix": "/p"}}])]}, port=port)
    assert (len(built) == 1) is kept


@pytest.mark.parametrize(
    ("vs_gateways", "match_gateways", "gateway", "kept"),
    [
        pytest.param([], [], None, True, id="default-mesh-sidecar"),
        pytest.param([], [], "bookinfo/gw", False, id="default-mesh-not-gateway"),
        pytest.param(["gw"], [], "bookinfo/gw", True, id="vs-gateway-short-name"),
        pytest.param(["gw"], [], None, False, id="vs-gateway-excludes-mesh"),
        pytest.param(["gw", "mesh"], [], None, True, id="vs-gateway-and-mesh"),
        pytest.param(["gw", "mesh"], ["mesh"], "bookinfo/gw", False, id="match-narrows-to-mesh"),
        pytest.param(["mesh"], ["other/gw"], "other/gw", True, id="match-names-gateway"),
        pytest.param([], ["./gw"], "bookinfo/gw", True, id="dot-slash-form"),
        pytest.param([], ["gw.edge.svc.cluster.local"], "edge/gw", True, id="legacy-fqdn-gateway"),
        pytest.param(["gw"], [], {"bookinfo/other", "bookinfo/gw"}, True, id="several-gateways"),
    ],
)
def test_route_match_gateway_filter(
    vs_gateways: list[str], match_gateways: list[str], gateway: Any, kept: bool
) -> None:
    match: dict[str, Any] = {"uri": {"prefix": "/g"}}
    if match_gateways:
        match["gateways"] = match_gateways
    built = routes({"gateways": vs_gateways, "http": [http([match])]}, gateway=gateway)
    assert (len(built) == 1) is kept


def test_route_no_match_route_follows_vs_gateways() -> None:
    assert routes({"gateways": ["gw"], "http": [http()]}, gateway=None) == []
    assert len(routes({"gateways": ["gw"], "http": [http()]}, gateway="bookinfo/gw")) == 1


@pytest.mark.parametrize(
    ("match", "labels", "namespace", "kept"),
    [
        pytest.param({"sourceLabels": {"app": "a"}}, {"app": "a", "v": "1"}, "x", True, id="sub"),
        pytest.param({"sourceLabels": {"app": "a"}}, {"app": "b"}, "x", False, id="other-label"),
        pytest.param({"sourceLabels": {"app": "a"}}, None, None, False, id="unknown-proxy"),
        pytest.param({"sourceNamespace": "x"}, None, "x", True, id="same-namespace"),
        pytest.param({"sourceNamespace": "x"}, None, "y", False, id="other-namespace"),
        pytest.param(
            {"sourceLabels": {"app": "a"}, "gateways": ["mesh"]},
            {"app": "b"},
            "x",
            True,
            id="gateways-named-labels-ignored-as-istiod",
        ),
    ],
)
def test_route_match_source_filter(
    match: dict[str, Any], labels: dict[str, str] | None, namespace: str | None, kept: bool
) -> None:
    built = routes(
        {"http": [http([{**match, "uri": {"prefix": "/s"}}])]},
        proxy_labels=labels,
        proxy_namespace=namespace,
    )
    assert (len(built) == 1) is kept


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mesh", "mesh"),
        ("gw", "ns/gw"),
        ("./gw", "ns/gw"),
        ("other/gw", "other/gw"),
        ("gw.edge.svc.cluster.local", "edge/gw"),
        ("gw.edge", "edge/gw"),
    ],
)
def test_route_gateway_name_resolution(name: str, expected: str) -> None:
    assert resolve_gateway_name(name, "ns") == expected


@pytest.mark.parametrize(
    ("match", "catch_all"),
    [
        ({"prefix": "/"}, True),
        ({"safe_regex": {"regex": ".*"}}, True),
        ({"prefix": "/a"}, False),
        ({"prefix": "/", "headers": [{"name": "x", "present_match": True}]}, False),
        ({"prefix": "/", "query_parameters": [{"name": "q", "present_match": True}]}, False),
        ({"path": "/"}, False),
    ],
)
def test_route_catch_all_detection(match: dict[str, Any], catch_all: bool) -> None:
    assert is_catch_all(json_format.ParseDict(match, rc_pb2.RouteMatch())) is catch_all
