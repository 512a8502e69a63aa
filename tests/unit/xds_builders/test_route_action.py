"""Route actions: destinations and weights, timeouts, retries, mirrors, rewrites, redirects."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.route.v3 import route_components_pb2 as rc_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.xds.builders.load_balancer import hash_policy
from pilothouse.xds.builders.route import build_http_routes
from pilothouse.xds.builders.route_destination import (
    ResolvedDestination,
    destination_cluster,
    service_resolver,
)

REVIEWS = "reviews.bookinfo.svc.cluster.local"
RATINGS = "ratings.bookinfo.svc.cluster.local"
SERVICES = {REVIEWS: [9080], RATINGS: [9080, 9090], "db.data.svc.cluster.local": [5432]}
PREVIOUS_HOSTS = {
    "name": "envoy.retry_host_predicates.previous_hosts",
    "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3."
        "PreviousHostsPredicate"
    },
}
DEFAULT_RETRY = {
    "retry_on": "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes",
    "num_retries": 2,
    "retry_host_predicate": [PREVIOUS_HOSTS],
    "host_selection_retry_max_attempts": "5",
}


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def build(http: dict[str, Any], **kwargs: Any) -> list[rc_pb2.Route]:
    spec = {"hosts": ["reviews"], "http": [http]}
    options: dict[str, Any] = {"port": 9080, "gateway": None, "vs_name": "reviews"}
    options.update(kwargs)
    return build_http_routes(
        json_format.ParseDict(spec, vs_pb2.VirtualService()),
        "bookinfo",
        service_resolver(SERVICES, current_port=options["port"]),
        **options,
    )


def action(http: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    built = build(http, **kwargs)
    assert len(built) == 1
    return as_dict(built[0].route)


def to(host: str = "reviews", **destination: Any) -> dict[str, Any]:
    return {"route": [{"destination": {"host": host, **destination}}]}


@pytest.mark.parametrize(
    ("destination", "port", "cluster"),
    [
        pytest.param({"host": "reviews"}, 9080, f"outbound|9080||{REVIEWS}", id="short-name"),
        pytest.param(
            {"host": REVIEWS, "subset": "v2"}, 9080, f"outbound|9080|v2|{REVIEWS}", id="fqdn-subset"
        ),
        pytest.param({"host": "reviews"}, 7000, f"outbound|9080||{REVIEWS}", id="only-port"),
        pytest.param(
            {"host": "ratings"}, 9090, f"outbound|9090||{RATINGS}", id="multi-port-current"
        ),
        pytest.param(
            {"host": "ratings", "port": {"number": 9080}},
            9090,
            f"outbound|9080||{RATINGS}",
            id="explicit-port",
        ),
        pytest.param(
            {"host": "db.data.svc.cluster.local"},
            80,
            "outbound|5432||db.data.svc.cluster.local",
            id="other-namespace-fqdn",
        ),
        pytest.param(
            {"host": "nowhere"},
            8000,
            "outbound|8000||nowhere.bookinfo.svc.cluster.local",
            id="unknown-short",
        ),
        pytest.param(
            {"host": "api.example.com", "subset": "s", "port": {"number": 443}},
            80,
            "outbound|443|s|api.example.com",
            id="unknown-with-port",
        ),
    ],
)
def test_route_destination_cluster(destination: dict[str, Any], port: int, cluster: str) -> None:
    assert action({"route": [{"destination": destination}]}, port=port)["cluster"] == cluster


def test_route_resolver_sees_fqdn_and_port_request() -> None:
    asked: list[tuple[str, str, int | None]] = []

    def resolver(host: str, subset: str, port: int | None, /) -> ResolvedDestination | None:
        asked.append((host, subset, port))
        return ResolvedDestination("custom", host, 1)

    destination = json_format.ParseDict({"host": "reviews", "subset": "v1"}, vs_pb2.Destination())
    assert destination_cluster(destination, "bookinfo", resolver, current_port=9080) == "custom"
    assert asked == [(REVIEWS, "v1", None)]


def test_route_single_destination_ignores_weight_and_sets_defaults() -> None:
    out = action({"route": [{"destination": {"host": "reviews"}, "weight": 30}]})
    assert out == {
        "cluster": f"outbound|9080||{REVIEWS}",
        "timeout": "0s",
        "max_stream_duration": {"max_stream_duration": "0s", "grpc_timeout_header_max": "0s"},
        "retry_policy": DEFAULT_RETRY,
    }


def test_route_weighted_clusters() -> None:
    out = action(
        {
            "route": [
                {"destination": {"host": "reviews", "subset": "v1"}, "weight": 75},
                {"destination": {"host": "reviews", "subset": "v2"}, "weight": 25},
                {"destination": {"host": "reviews", "subset": "v3"}, "weight": 0},
                {"destination": {"host": "ratings", "port": {"number": 9090}}, "weight": 5},
            ]
        }
    )
    assert out["weighted_clusters"] == {
        "clusters": [
            {"name": f"outbound|9080|v1|{REVIEWS}", "weight": 75},
            {"name": f"outbound|9080|v2|{REVIEWS}", "weight": 25},
            {"name": f"outbound|9090||{RATINGS}", "weight": 5},
        ]
    }
    assert "cluster" not in out


def test_route_all_zero_weights_drop_the_route() -> None:
    http = {
        "route": [
            {"destination": {"host": "reviews", "subset": "v1"}, "weight": 0},
            {"destination": {"host": "reviews", "subset": "v2"}, "weight": 0},
        ]
    }
    assert build(http) == []


def test_route_without_destination_is_dropped() -> None:
    assert build({"match": [{"uri": {"prefix": "/"}}]}) == []


def test_route_destination_headers_single_and_weighted() -> None:
    headers = {
        "request": {
            "set": {"x-s": "1", "host": "h.example"},
            "add": {"x-a": "2"},
            "remove": ["x-r", ":path"],
        },
        "response": {"set": {"x-rs": "3"}, "add": {"x-ra": "4"}, "remove": ["x-rr"]},
    }
    single = build(
        {
            "route": [{"destination": {"host": "reviews"}, "headers": headers}],
            "headers": {"request": {"set": {"x-route": "r"}}},
        }
    )[0]
    as_json = as_dict(single)
    assert [h["header"]["key"] for h in as_json["request_headers_to_add"]] == [
        "x-route",
        "x-s",
        "x-a",
    ]
    assert as_json["request_headers_to_remove"] == ["x-r"]
    assert as_json["response_headers_to_add"] == [
        {"header": {"key": "x-rs", "value": "3"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
        {"header": {"key": "x-ra", "value": "4"}},
    ]
    assert as_json["response_headers_to_remove"] == ["x-rr"]
    assert as_json["route"]["host_rewrite_literal"] == "h.example"

    weighted = action(
        {
            "route": [
                {
                    "destination": {"host": "reviews", "subset": "v1"},
                    "weight": 50,
                    "headers": headers,
                },
                {"destination": {"host": "reviews", "subset": "v2"}, "weight": 50},
            ]
        }
    )
    first = weighted["weighted_clusters"]["clusters"][0]
    assert first["request_headers_to_add"] == [
        {"header": {"key": "x-s", "value": "1"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
        {"header": {"key": "x-a", "value": "2"}},
    ]
    assert first["request_headers_to_remove"] == ["x-r"]
    assert first["response_headers_to_remove"] == ["x-rr"]
    assert first["host_rewrite_literal"] == "h.example"
    assert "host_rewrite_literal" not in weighted


def test_route_rewrite_authority_wins_over_destination_authority() -> None:
    out = action(
        {
            "route": [
                {
                    "destination": {"host": "reviews"},
                    "headers": {"request": {"set": {":authority": "dest.example"}}},
                }
            ],
            "rewrite": {"authority": "rewrite.example"},
        }
    )
    assert out["host_rewrite_literal"] == "rewrite.example"


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [(None, "0s"), ("0s", "0s"), ("1.500s", "1.500s"), ("30s", "30s")],
)
def test_route_timeout(timeout: str | None, expected: str) -> None:
    http = to()
    if timeout is not None:
        http["timeout"] = timeout
    out = action(http)
    assert out["timeout"] == expected
    assert out["max_stream_duration"] == {
        "max_stream_duration": expected,
        "grpc_timeout_header_max": expected,
    }


@pytest.mark.parametrize(
    ("retries", "expected"),
    [
        pytest.param(None, DEFAULT_RETRY, id="istio-default"),
        pytest.param({"attempts": 0}, None, id="attempts-0-disables"),
        pytest.param({"attempts": 5}, {**DEFAULT_RETRY, "num_retries": 5}, id="attempts-only"),
        pytest.param(
            {"attempts": 3, "retryOn": "5xx, gateway-error,503,429", "perTryTimeout": "2s"},
            {
                **DEFAULT_RETRY,
                "num_retries": 3,
                "retry_on": "5xx,gateway-error,retriable-status-codes",
                "retriable_status_codes": [503, 429],
                "per_try_timeout": "2s",
            },
            id="status-codes-split-out",
        ),
        pytest.param(
            {"attempts": 1, "retryOn": "retriable-status-codes,503,999"},
            {
                **DEFAULT_RETRY,
                "num_retries": 1,
                "retry_on": "retriable-status-codes,999",
                "retriable_status_codes": [503],
            },
            id="not-a-status-code-stays",
        ),
        pytest.param(
            {"attempts": 1, "retryOn": "503"},
            {
                **DEFAULT_RETRY,
                "num_retries": 1,
                "retry_on": "retriable-status-codes",
                "retriable_status_codes": [503],
            },
            id="codes-only",
        ),
        pytest.param(
            {"attempts": 2, "retryIgnorePreviousHosts": False},
            {k: v for k, v in DEFAULT_RETRY.items() if k != "retry_host_predicate"},
            id="ignore-previous-hosts-false",
        ),
        pytest.param(
            {"attempts": 2, "retryRemoteLocalities": True, "backoff": "0.025s"},
            {
                **DEFAULT_RETRY,
                "retry_priority": {
                    "name": "envoy.retry_priorities.previous_priorities",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.retry.priority."
                        "previous_priorities.v3.PreviousPrioritiesConfig",
                        "update_frequency": 2,
                    },
                },
                "retry_back_off": {"base_interval": "0.025s"},
            },
            id="remote-localities-and-backoff",
        ),
    ],
)
def test_route_retry_policy(
    retries: dict[str, Any] | None, expected: dict[str, Any] | None
) -> None:
    http = to()
    if retries is not None:
        http["retries"] = retries
    out = action(http)
    assert out.get("retry_policy") == expected


def test_route_mesh_default_retries_apply_when_route_has_none() -> None:
    mesh = json_format.ParseDict({"attempts": 7, "retryOn": "reset"}, vs_pb2.HTTPRetry())
    assert action(to(), default_retries=mesh)["retry_policy"]["num_retries"] == 7
    own = {**to(), "retries": {"attempts": 1}}
    assert action(own, default_retries=mesh)["retry_policy"]["num_retries"] == 1


def sticky(cluster: str) -> list[Any]:
    lb = json_format.ParseDict(
        {"httpHeaderName": f"x-{cluster.split('|')[2] or 'none'}"},
        dr_pb2.LoadBalancerSettings.ConsistentHashLB(),
    )
    return hash_policy(lb) if "|v" in cluster else []


def test_route_consistent_hash_single_destination() -> None:
    out = action(to(subset="v1"), hash_policy_for=sticky)
    assert out["hash_policy"] == [{"header": {"header_name": "x-v1"}}]
    assert "retry_host_predicate" not in out["retry_policy"]
    assert out["retry_policy"]["num_retries"] == 2
    explicit = action(
        {**to(subset="v1"), "retries": {"attempts": 4, "retryIgnorePreviousHosts": True}},
        hash_policy_for=sticky,
    )
    assert explicit["retry_policy"]["retry_host_predicate"] == [PREVIOUS_HOSTS]


def test_route_consistent_hash_weighted_keeps_predicate() -> None:
    out = action(
        {
            "route": [
                {"destination": {"host": "reviews", "subset": "v1"}, "weight": 50},
                {"destination": {"host": "reviews"}, "weight": 25},
                {"destination": {"host": "reviews", "subset": "v2"}, "weight": 25},
            ]
        },
        hash_policy_for=sticky,
    )
    assert out["hash_policy"] == [
        {"header": {"header_name": "x-v1"}},
        {"header": {"header_name": "x-v2"}},
    ]
    assert out["retry_policy"]["retry_host_predicate"] == [PREVIOUS_HOSTS]


@pytest.mark.parametrize(
    ("mirror", "expected"),
    [
        pytest.param(
            {"mirror": {"host": "ratings", "port": {"number": 9090}}},
            [(f"outbound|9090||{RATINGS}", {"numerator": 100})],
            id="mirror-default-100",
        ),
        pytest.param(
            {"mirror": {"host": "reviews", "subset": "v2"}, "mirrorPercentage": {"value": 12.5}},
            [(f"outbound|9080|v2|{REVIEWS}", {"numerator": 125000, "denominator": "MILLION"})],
            id="mirror-percentage",
        ),
        pytest.param(
            {"mirror": {"host": "reviews"}, "mirrorPercent": 30},
            [(f"outbound|9080||{REVIEWS}", {"numerator": 30})],
            id="mirror-percent-deprecated",
        ),
        pytest.param(
            {"mirror": {"host": "reviews"}, "mirrorPercentage": {"value": 0}}, [], id="zero"
        ),
        pytest.param(
            {
                "mirrors": [
                    {
                        "destination": {"host": "reviews", "subset": "v3"},
                        "percentage": {"value": 0.5},
                    },
                    {"destination": {"host": "ratings", "port": {"number": 9080}}},
                    {"destination": {"host": "reviews"}, "percentage": {"value": 0}},
                ]
            },
            [
                (f"outbound|9080|v3|{REVIEWS}", {"numerator": 5000, "denominator": "MILLION"}),
                (f"outbound|9080||{RATINGS}", {"numerator": 100}),
            ],
            id="mirrors",
        ),
    ],
)
def test_route_mirrors(mirror: dict[str, Any], expected: list[tuple[str, dict[str, Any]]]) -> None:
    out = action({**to(), **mirror})
    assert out.get("request_mirror_policies", []) == [
        {
            "cluster": cluster,
            "runtime_fraction": {"default_value": fraction},
            "trace_sampled": False,
        }
        for cluster, fraction in expected
    ]


@pytest.mark.parametrize(
    ("match", "rewrite", "expected"),
    [
        pytest.param(
            {"uri": {"prefix": "/api"}}, {"uri": "/v2"}, {"prefix_rewrite": "/v2"}, id="prefix"
        ),
        pytest.param(
            {"uri": {"exact": "/old"}},
            {"uri": "/new"},
            {"prefix_rewrite": "/new"},
            id="exact-full-path",
        ),
        pytest.param(
            {"uri": {"regex": "/o.*"}},
            {"uri": "/n"},
            {"prefix_rewrite": "/n"},
            id="regex-full-path",
        ),
        pytest.param(
            {"uri": {"prefix": "/a"}},
            {"uriRegexRewrite": {"match": "^/a/(.*)", "rewrite": "/b/\\1"}},
            {"regex_rewrite": {"pattern": {"regex": "^/a/(.*)"}, "substitution": "/b/\\1"}},
            id="uri-regex-rewrite",
        ),
        pytest.param(
            {"uri": {"prefix": "/a"}},
            {"authority": "new.host"},
            {"host_rewrite_literal": "new.host"},
            id="authority",
        ),
    ],
)
def test_route_rewrite(
    match: dict[str, Any], rewrite: dict[str, Any], expected: dict[str, Any]
) -> None:
    out = action({**to(), "match": [match], "rewrite": rewrite})
    keys = ("prefix_rewrite", "regex_rewrite", "host_rewrite_literal")
    assert {key: out[key] for key in keys if key in out} == expected


def test_route_headers_authority_becomes_host_rewrite() -> None:
    out = action(
        {
            **to(),
            "headers": {
                "request": {"add": {"Host": "a.example"}, "set": {":authority": "s.example"}}
            },
        }
    )
    assert out["host_rewrite_literal"] == "s.example"


@pytest.mark.parametrize(
    ("redirect", "port", "tls", "expected"),
    [
        pytest.param({"uri": "/new"}, 80, False, {"path_redirect": "/new"}, id="uri-default-301"),
        pytest.param(
            {"uri": "/n", "redirectCode": 302},
            80,
            False,
            {"path_redirect": "/n", "response_code": "FOUND"},
            id="302",
        ),
        pytest.param({"redirectCode": 303}, 80, False, {"response_code": "SEE_OTHER"}, id="303"),
        pytest.param(
            {"redirectCode": 307}, 80, False, {"response_code": "TEMPORARY_REDIRECT"}, id="307"
        ),
        pytest.param(
            {"redirectCode": 308}, 80, False, {"response_code": "PERMANENT_REDIRECT"}, id="308"
        ),
        pytest.param(
            {"prefixRewrite": "/v2"}, 80, False, {"prefix_rewrite": "/v2"}, id="prefix-rewrite"
        ),
        pytest.param(
            {"authority": "b.example", "scheme": "https"},
            80,
            False,
            {"host_redirect": "b.example", "scheme_redirect": "https"},
            id="authority-scheme",
        ),
        pytest.param({"port": 8443}, 80, False, {"port_redirect": 8443}, id="port"),
        pytest.param({"port": 80}, 8080, False, {}, id="port-80-http-left-out"),
        pytest.param(
            {"port": 443, "scheme": "https"},
            80,
            False,
            {"scheme_redirect": "https"},
            id="443-https-left-out",
        ),
        pytest.param({"port": 443}, 80, True, {}, id="443-on-tls-listener"),
        pytest.param(
            {"derivePort": "FROM_REQUEST_PORT"},
            8080,
            False,
            {"port_redirect": 8080},
            id="derive-request-port",
        ),
        pytest.param(
            {"derivePort": "FROM_REQUEST_PORT"}, 80, False, {}, id="derive-request-port-80"
        ),
        pytest.param(
            {"derivePort": "FROM_PROTOCOL_DEFAULT", "scheme": "https"},
            8080,
            False,
            {"scheme_redirect": "https"},
            id="derive-protocol-default",
        ),
    ],
)
def test_route_redirect(
    redirect: dict[str, Any], port: int, tls: bool, expected: dict[str, Any]
) -> None:
    built = build({"redirect": redirect}, port=port, tls_listener=tls)
    assert len(built) == 1
    assert built[0].WhichOneof("action") == "redirect"
    assert as_dict(built[0].redirect) == expected


def test_route_redirect_unsupported_code_drops_route() -> None:
    assert build({"redirect": {"uri": "/x", "redirectCode": 300}}) == []


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ({"status": 204}, {"status": 204}),
        (
            {"status": 503, "body": {"string": "down"}},
            {"status": 503, "body": {"inline_string": "down"}},
        ),
        (
            {"status": 200, "body": {"bytes": "AAEC"}},
            {"status": 200, "body": {"inline_bytes": "AAEC"}},
        ),
    ],
)
def test_route_direct_response(response: dict[str, Any], expected: dict[str, Any]) -> None:
    built = build({"directResponse": response})
    assert built[0].WhichOneof("action") == "direct_response"
    assert as_dict(built[0].direct_response) == expected
