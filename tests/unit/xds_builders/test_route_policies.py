"""Per-route policies: fault and CORS filter configs, header operations, names and metadata."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.route.v3 import route_components_pb2 as rc_pb2
from envoy.extensions.filters.http.cors.v3 import cors_pb2
from envoy.extensions.filters.http.fault.v3 import fault_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.xds.builders.route import build_http_routes, virtual_service_config_path
from pilothouse.xds.builders.route_destination import service_resolver

REVIEWS = "reviews.bookinfo.svc.cluster.local"


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def build(https: list[dict[str, Any]], **kwargs: Any) -> list[rc_pb2.Route]:
    spec = {"hosts": ["reviews"], "http": https}
    options: dict[str, Any] = {"port": 9080, "gateway": None, "vs_name": "reviews"}
    options.update(kwargs)
    return build_http_routes(
        json_format.ParseDict(spec, vs_pb2.VirtualService()),
        "bookinfo",
        service_resolver({REVIEWS: [9080]}, current_port=9080),
        **options,
    )


def single(**http: Any) -> rc_pb2.Route:
    built = build([{"route": [{"destination": {"host": "reviews"}}], **http}])
    assert len(built) == 1
    return built[0]


def fault_of(route: rc_pb2.Route) -> dict[str, Any] | None:
    if "envoy.filters.http.fault" not in route.typed_per_filter_config:
        return None
    fault = fault_pb2.HTTPFault()
    assert route.typed_per_filter_config["envoy.filters.http.fault"].Unpack(fault)
    return as_dict(fault)


def cors_of(route: rc_pb2.Route) -> dict[str, Any]:
    cors = cors_pb2.CorsPolicy()
    assert route.typed_per_filter_config["envoy.filters.http.cors"].Unpack(cors)
    return as_dict(cors)


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        pytest.param(
            {"delay": {"fixedDelay": "5s", "percentage": {"value": 12.5}}},
            {
                "delay": {
                    "fixed_delay": "5s",
                    "percentage": {"numerator": 125000, "denominator": "MILLION"},
                }
            },
            id="delay-percentage",
        ),
        pytest.param(
            {"delay": {"fixedDelay": "1s", "percent": 40}},
            {"delay": {"fixed_delay": "1s", "percentage": {"numerator": 40}}},
            id="delay-deprecated-percent",
        ),
        pytest.param(
            {"delay": {"fixedDelay": "1s"}},
            {"delay": {"fixed_delay": "1s", "percentage": {}}},
            id="delay-no-percentage-is-0",
        ),
        pytest.param({"delay": {"exponentialDelay": "1s"}}, None, id="exponential-unsupported"),
        pytest.param(
            {"abort": {"httpStatus": 503, "percentage": {"value": 0.1}}},
            {
                "abort": {
                    "http_status": 503,
                    "percentage": {"numerator": 1000, "denominator": "MILLION"},
                }
            },
            id="abort-http",
        ),
        pytest.param(
            {"abort": {"grpcStatus": "UNAVAILABLE", "percentage": {"value": 100}}},
            {
                "abort": {
                    "grpc_status": 14,
                    "percentage": {"numerator": 1000000, "denominator": "MILLION"},
                }
            },
            id="abort-grpc",
        ),
        pytest.param({"abort": {"httpStatus": 418}}, {"abort": {"http_status": 418}}, id="no-pct"),
        pytest.param({"abort": {"grpcStatus": "NOPE"}}, None, id="unknown-grpc-status"),
        pytest.param({"abort": {"http2Error": "x"}}, None, id="http2-error-unsupported"),
        pytest.param(
            {
                "delay": {"fixedDelay": "0.100s", "percentage": {"value": 50}},
                "abort": {"httpStatus": 500, "percentage": {"value": 0.57}},
            },
            {
                "delay": {
                    "fixed_delay": "0.100s",
                    "percentage": {"numerator": 500000, "denominator": "MILLION"},
                },
                "abort": {
                    "http_status": 500,
                    "percentage": {"numerator": 5699, "denominator": "MILLION"},
                },
            },
            id="both-truncated-as-istiod",
        ),
    ],
)
def test_route_fault(fault: dict[str, Any], expected: dict[str, Any] | None) -> None:
    assert fault_of(single(fault=fault)) == expected


def test_route_fault_type_url() -> None:
    route = single(fault={"abort": {"httpStatus": 503}})
    assert route.typed_per_filter_config["envoy.filters.http.fault"].type_url == (
        "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
    )


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(
            {
                "allowOrigins": [{"exact": "https://a.example"}, {"prefix": "https://b"}],
                "allowMethods": ["GET", "POST"],
                "allowHeaders": ["x-a", "x-b"],
                "exposeHeaders": ["x-c"],
                "maxAge": "86400s",
                "allowCredentials": True,
            },
            {
                "allow_origin_string_match": [
                    {"exact": "https://a.example"},
                    {"prefix": "https://b"},
                ],
                "allow_methods": "GET,POST",
                "allow_headers": "x-a,x-b",
                "expose_headers": "x-c",
                "max_age": "86400",
                "allow_credentials": True,
                "filter_enabled": {"default_value": {"numerator": 100}},
                "forward_not_matching_preflights": True,
            },
            id="full",
        ),
        pytest.param(
            {"allowOrigin": ["https://old.example"], "unmatchedPreflights": "IGNORE"},
            {
                "allow_origin_string_match": [{"exact": "https://old.example"}],
                "filter_enabled": {"default_value": {"numerator": 100}},
                "forward_not_matching_preflights": False,
            },
            id="deprecated-origin-ignore-preflights",
        ),
        pytest.param(
            {
                "allowOrigins": [{"regex": ".*\\.example"}],
                "allowOrigin": ["https://ignored"],
                "unmatchedPreflights": "FORWARD",
                "allowCredentials": False,
            },
            {
                "allow_origin_string_match": [{"safe_regex": {"regex": ".*\\.example"}}],
                "allow_credentials": False,
                "filter_enabled": {"default_value": {"numerator": 100}},
                "forward_not_matching_preflights": True,
            },
            id="origins-win-forward",
        ),
    ],
)
def test_route_cors(policy: dict[str, Any], expected: dict[str, Any]) -> None:
    assert cors_of(single(corsPolicy=policy)) == expected


def test_route_no_policies_no_filter_config() -> None:
    assert len(single().typed_per_filter_config) == 0


def test_route_header_operations() -> None:
    route = single(
        headers={
            "request": {
                "set": {"x-z": "1", "x-a": "2", ":path": "/no"},
                "add": {"x-add": "3"},
                "remove": ["x-gone", "Host"],
            },
            "response": {"set": {"x-s": "4"}, "add": {"x-b": "5", "x-a": "6"}, "remove": ["x-r"]},
        }
    )
    as_json = as_dict(route)
    assert as_json["request_headers_to_add"] == [
        {"header": {"key": "x-a", "value": "2"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
        {"header": {"key": "x-z", "value": "1"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
        {"header": {"key": "x-add", "value": "3"}},
    ]
    assert route.request_headers_to_add[2].append_action == (
        route.request_headers_to_add[2].APPEND_IF_EXISTS_OR_ADD
    )
    assert as_json["request_headers_to_remove"] == ["x-gone"]
    assert as_json["response_headers_to_add"] == [
        {"header": {"key": "x-s", "value": "4"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
        {"header": {"key": "x-a", "value": "6"}},
        {"header": {"key": "x-b", "value": "5"}},
    ]
    assert as_json["response_headers_to_remove"] == ["x-r"]


def test_route_headers_apply_to_redirects_too() -> None:
    route = build(
        [{"redirect": {"uri": "/x"}, "headers": {"response": {"set": {"x-why": "moved"}}}}]
    )[0]
    assert [h.header.key for h in route.response_headers_to_add] == ["x-why"]


def test_route_names_and_stat_prefix() -> None:
    built = build(
        [
            {
                "name": "primary",
                "match": [
                    {"name": "first", "uri": {"prefix": "/a"}, "statPrefix": "stats-a"},
                    {"uri": {"prefix": "/b"}},
                ],
                "route": [{"destination": {"host": "reviews"}}],
            },
            {
                "match": [{"name": "orphan", "uri": {"prefix": "/c"}}],
                "route": [{"destination": {"host": "reviews"}}],
            },
            {"match": [{"uri": {"prefix": "/d"}}], "route": [{"destination": {"host": "reviews"}}]},
        ]
    )
    assert [route.name for route in built] == ["primary.first", "primary", ".orphan", ""]
    assert [route.stat_prefix for route in built] == ["stats-a", "", "", ""]


def test_route_istio_metadata_names_the_virtual_service() -> None:
    route = single()
    assert as_dict(route.metadata) == {
        "filter_metadata": {
            "istio": {
                "config": "/apis/networking.istio.io/v1/namespaces/bookinfo/virtual-service/reviews"
            }
        }
    }
    assert virtual_service_config_path("ns", "vs") == (
        "/apis/networking.istio.io/v1/namespaces/ns/virtual-service/vs"
    )


@pytest.mark.parametrize(
    ("http", "operation"),
    [
        pytest.param(
            {
                "match": [{"uri": {"prefix": "/api"}}],
                "route": [{"destination": {"host": "reviews"}}],
            },
            f"{REVIEWS}:9080/api*",
            id="single-cluster-prefix",
        ),
        pytest.param(
            {"match": [{"uri": {"exact": "/x"}}], "route": [{"destination": {"host": "reviews"}}]},
            f"{REVIEWS}:9080/x",
            id="exact",
        ),
        pytest.param(
            {
                "match": [{"uri": {"regex": "/r.*"}}],
                "route": [
                    {"destination": {"host": "reviews", "subset": "a"}, "weight": 1},
                    {"destination": {"host": "reviews", "subset": "b"}, "weight": 1},
                ],
            },
            "reviews:9080/r.*",
            id="weighted-uses-vs-name",
        ),
        pytest.param({"directResponse": {"status": 200}}, "reviews:9080/*", id="direct-response"),
    ],
)
def test_route_decorator_operation(http: dict[str, Any], operation: str) -> None:
    assert build([http])[0].decorator.operation == operation
