"""Delegation: a root route replaced by its delegate's routes, matches merged, conflicts dropped."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.route.v3 import route_components_pb2 as rc_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.xds.builders.route import build_http_routes
from pilothouse.xds.builders.route_delegate import has_conflict, string_match_conflict
from pilothouse.xds.builders.route_destination import service_resolver

SERVICES = {
    "reviews.bookinfo.svc.cluster.local": [9080],
    "reviews.team.svc.cluster.local": [9080],
    "ratings.bookinfo.svc.cluster.local": [9080],
}


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def vs(spec: dict[str, Any]) -> vs_pb2.VirtualService:
    return json_format.ParseDict(spec, vs_pb2.VirtualService())


def build(
    root_http: list[dict[str, Any]],
    delegates: dict[tuple[str, str], dict[str, Any]],
    **kwargs: Any,
) -> list[rc_pb2.Route]:
    looked_up = {key: vs(spec) for key, spec in delegates.items()}
    options: dict[str, Any] = {"port": 9080, "gateway": None, "vs_name": "root"}
    options.update(kwargs)
    return build_http_routes(
        vs({"hosts": ["reviews"], "http": root_http}),
        "bookinfo",
        service_resolver(SERVICES, current_port=9080),
        lookup_delegate=lambda name, namespace: looked_up.get((name, namespace)),
        **options,
    )


def to(host: str = "reviews", **extra: Any) -> dict[str, Any]:
    return {"route": [{"destination": {"host": host}}], **extra}


def paths(routes: list[rc_pb2.Route]) -> list[str]:
    out = []
    for route in routes:
        match = as_dict(route.match)
        out.append(match.get("prefix") or match.get("path") or match["safe_regex"]["regex"])
    return out


def test_route_delegate_replaces_root_route() -> None:
    routes = build(
        [
            {"match": [{"uri": {"prefix": "/first"}}], **to("ratings")},
            {"name": "root", "match": [{"uri": {"prefix": "/api"}}], "delegate": {"name": "child"}},
            to("ratings"),
        ],
        {
            ("child", "bookinfo"): {
                "http": [
                    {"name": "v2", "match": [{"uri": {"prefix": "/api/v2"}}], **to()},
                    {"name": "rest", **to()},
                ]
            }
        },
    )
    assert paths(routes) == ["/first", "/api/v2", "/api", "/"]
    assert [route.name for route in routes] == ["", "root-v2", "root-rest", ""]
    assert routes[1].route.cluster == "outbound|9080||reviews.bookinfo.svc.cluster.local"
    assert routes[1].metadata.filter_metadata["istio"]["config"].endswith("/virtual-service/root")


def test_route_delegate_short_names_read_in_delegate_namespace() -> None:
    routes = build(
        [{"match": [{"uri": {"prefix": "/"}}], "delegate": {"name": "child", "namespace": "team"}}],
        {("child", "team"): {"http": [to()]}},
    )
    assert [route.route.cluster for route in routes] == [
        "outbound|9080||reviews.team.svc.cluster.local"
    ]


@pytest.mark.parametrize(
    "delegates",
    [
        pytest.param({}, id="missing"),
        pytest.param({("child", "bookinfo"): {"hosts": ["x"], "http": [to()]}}, id="has-hosts"),
    ],
)
def test_route_delegate_not_found_drops_only_that_route(
    delegates: dict[tuple[str, str], dict[str, Any]],
) -> None:
    routes = build(
        [
            {"match": [{"uri": {"prefix": "/d"}}], "delegate": {"name": "child"}},
            {"match": [{"uri": {"prefix": "/kept"}}], **to()},
        ],
        delegates,
    )
    assert paths(routes) == ["/kept"]


def test_route_delegate_one_level_only() -> None:
    routes = build(
        [{"match": [{"uri": {"prefix": "/a"}}], "delegate": {"name": "child"}}],
        {
            ("child", "bookinfo"): {
                "http": [
                    {"match": [{"uri": {"prefix": "/a/deeper"}}], "delegate": {"name": "grand"}},
                    {"match": [{"uri": {"prefix": "/a/b"}}], **to()},
                ]
            },
            ("grand", "bookinfo"): {"http": [to()]},
        },
    )
    assert paths(routes) == ["/a/b"]


def test_route_delegate_match_merge() -> None:
    routes = build(
        [
            {
                "name": "r",
                "match": [
                    {
                        "name": "m",
                        "uri": {"prefix": "/api"},
                        "headers": {"x-root": {"exact": "1"}, "x-both": {"exact": "root"}},
                        "queryParams": {"q": {"exact": "1"}},
                        "method": {"exact": "GET"},
                        "port": 9080,
                        "statPrefix": "root-stats",
                    }
                ],
                "delegate": {"name": "child"},
            }
        ],
        {
            ("child", "bookinfo"): {
                "http": [
                    {
                        "match": [
                            {
                                "name": "c",
                                "uri": {"exact": "/api/x"},
                                "headers": {"x-child": {"prefix": "c"}},
                                "withoutHeaders": {"x-no": {}},
                            }
                        ],
                        **to(),
                    }
                ]
            }
        },
    )
    assert len(routes) == 1
    route = routes[0]
    assert route.name == "r.m-c"
    assert route.stat_prefix == "root-stats"
    match = as_dict(route.match)
    assert match["path"] == "/api/x"
    assert [(h["name"], h.get("invert_match", False)) for h in match["headers"]] == [
        ("x-both", False),
        ("x-child", False),
        ("x-no", True),
        ("x-root", False),
        (":method", False),
    ]
    assert match["query_parameters"] == [{"name": "q", "string_match": {"exact": "1"}}]


def test_route_delegate_child_match_expands_over_every_fitting_root_match() -> None:
    routes = build(
        [
            {
                "match": [{"uri": {"prefix": "/a"}}, {"uri": {"prefix": "/b"}}],
                "delegate": {"name": "child"},
            }
        ],
        {
            ("child", "bookinfo"): {
                "http": [
                    {"match": [{"headers": {"x": {"exact": "1"}}}], **to()},
                    {"match": [{"uri": {"prefix": "/b/1"}}], **to("ratings")},
                ]
            }
        },
    )
    assert paths(routes) == ["/a", "/b", "/b/1"]


def test_route_delegate_conflicting_child_is_dropped() -> None:
    routes = build(
        [{"match": [{"uri": {"prefix": "/api"}}], "delegate": {"name": "child"}}],
        {
            ("child", "bookinfo"): {
                "http": [
                    {"match": [{"uri": {"prefix": "/other"}}], **to()},
                    {"match": [{"uri": {"prefix": "/api/ok"}}, {"uri": {"exact": "/no"}}], **to()},
                    {"match": [{"uri": {"prefix": "/api/fine"}}], **to()},
                ]
            }
        },
    )
    assert paths(routes) == ["/api/fine"]


def test_route_delegate_inherits_root_policies() -> None:
    routes = build(
        [
            {
                "match": [{"uri": {"prefix": "/"}}],
                "delegate": {"name": "child"},
                "timeout": "3s",
                "retries": {"attempts": 0},
                "headers": {"request": {"set": {"x-root": "1"}}},
                "rewrite": {"authority": "root.example"},
                "fault": {"abort": {"httpStatus": 500, "percentage": {"value": 1}}},
                "corsPolicy": {"allowOrigins": [{"exact": "o"}]},
                "mirror": {"host": "ratings"},
            }
        ],
        {
            ("child", "bookinfo"): {
                "http": [
                    {"match": [{"uri": {"prefix": "/own"}}], "timeout": "9s", **to()},
                    to(),
                ]
            }
        },
    )
    own, inherited = routes
    assert own.route.timeout.seconds == 9
    assert inherited.route.timeout.seconds == 3
    for route in routes:
        assert not route.route.HasField("retry_policy")
        assert [h.header.key for h in route.request_headers_to_add] == ["x-root"]
        assert route.route.host_rewrite_literal == "root.example"
        assert set(route.typed_per_filter_config) == {
            "envoy.filters.http.fault",
            "envoy.filters.http.cors",
        }
        assert [m.cluster for m in route.route.request_mirror_policies] == [
            "outbound|9080||ratings.bookinfo.svc.cluster.local"
        ]


def test_route_delegate_without_lookup_drops_delegating_route() -> None:
    spec = vs(
        {
            "hosts": ["reviews"],
            "http": [{"delegate": {"name": "child"}}, to()],
        }
    )
    routes = build_http_routes(
        spec,
        "bookinfo",
        service_resolver(SERVICES, current_port=9080),
        port=9080,
        gateway=None,
        vs_name="root",
    )
    assert len(routes) == 1


def sm(spec: dict[str, Any] | None) -> vs_pb2.StringMatch | None:
    return None if spec is None else json_format.ParseDict(spec, vs_pb2.StringMatch())


@pytest.mark.parametrize(
    ("root", "leaf", "conflict"),
    [
        (None, {"exact": "/a"}, False),
        ({"prefix": "/a"}, None, False),
        ({"prefix": "/a"}, {"prefix": "/a/b"}, False),
        ({"prefix": "/a/b"}, {"prefix": "/a"}, True),
        ({"prefix": "/a"}, {"exact": "/a/x"}, False),
        ({"prefix": "/a"}, {"exact": "/b"}, True),
        ({"exact": "/a"}, {"exact": "/a"}, False),
        ({"exact": "/a"}, {"exact": "/b"}, True),
        ({"exact": "/a"}, {"prefix": "/a"}, True),
        ({"regex": ".*"}, {"prefix": "/a"}, True),
        ({"prefix": "/a"}, {"regex": "/a.*"}, True),
        ({"regex": "a"}, {"regex": "a"}, True),
    ],
)
def test_route_delegate_string_match_conflict(
    root: dict[str, Any] | None, leaf: dict[str, Any] | None, conflict: bool
) -> None:
    assert string_match_conflict(sm(root), sm(leaf)) is conflict


@pytest.mark.parametrize(
    ("root", "leaf", "conflict"),
    [
        ({"ignoreUriCase": True}, {}, True),
        ({"port": 80}, {"port": 81}, True),
        ({"port": 80}, {}, False),
        ({"sourceNamespace": "a"}, {"sourceNamespace": "b"}, True),
        ({"sourceNamespace": "a"}, {}, True),
        ({"sourceLabels": {"app": "x"}}, {"sourceLabels": {"app": "y"}}, True),
        ({"sourceLabels": {"app": "x"}}, {"sourceLabels": {"v": "1"}}, False),
        ({"gateways": ["a", "b"]}, {"gateways": ["a"]}, False),
        ({"gateways": ["a"]}, {"gateways": ["a", "b"]}, True),
        ({"gateways": ["a"]}, {"gateways": ["c"]}, True),
        ({"headers": {"h": {"exact": "1"}}}, {"headers": {"h": {"exact": "2"}}}, True),
        ({"headers": {"h": {"prefix": "a"}}}, {"headers": {"h": {"exact": "ab"}}}, False),
        (
            {"withoutHeaders": {"h": {"exact": "1"}}},
            {"withoutHeaders": {"h": {"exact": "2"}}},
            True,
        ),
        ({"queryParams": {"q": {"exact": "1"}}}, {"queryParams": {"q": {"exact": "2"}}}, True),
        ({"queryParams": {"q": {"exact": "1"}}}, {"queryParams": {"other": {"exact": "2"}}}, False),
    ],
)
def test_route_delegate_match_conflict(
    root: dict[str, Any], leaf: dict[str, Any], conflict: bool
) -> None:
    parse = vs_pb2.HTTPMatchRequest
    assert (
        has_conflict(json_format.ParseDict(root, parse()), json_format.ParseDict(leaf, parse()))
        is conflict
    )
