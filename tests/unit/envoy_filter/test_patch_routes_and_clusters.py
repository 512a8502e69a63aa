"""Route-class patches (ROUTE_CONFIGURATION, VIRTUAL_HOST, HTTP_ROUTE) and CLUSTER
patches, each operation as istiod applies it."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.route.v3 import route_pb2
from google.protobuf.json_format import ParseDict

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.xds.builders.envoy_patch_cluster import patch_clusters
from pilothouse.xds.builders.envoy_patch_match import Applied
from pilothouse.xds.builders.envoy_patch_route import patch_route_configuration

from .patching import rules

OUTBOUND = EnvoyFilter.SIDECAR_OUTBOUND
GATEWAY = EnvoyFilter.GATEWAY


def route_config(name: str = "8080") -> Any:
    return ParseDict(
        {
            "name": name,
            "virtual_hosts": [
                {
                    "name": "a:8080",
                    "domains": ["a", "a:8080"],
                    "routes": [
                        {"name": "first", "match": {"prefix": "/x"}, "route": {"cluster": "a"}},
                        {"name": "second", "match": {"prefix": "/"}, "route": {"cluster": "a"}},
                    ],
                },
                {
                    "name": "b:8080",
                    "domains": ["b"],
                    "routes": [{"match": {"prefix": "/"}, "redirect": {"host_redirect": "c"}}],
                },
            ],
        },
        route_pb2.RouteConfiguration(),
    )


def run_routes(*patches: dict[str, Any], name: str = "8080", context: int = OUTBOUND) -> Any:
    config = route_config(name)
    applied: Applied = set()
    patch_route_configuration(config, rules(*patches), context, ("shop/web",), applied)
    return config


HEADER = {"response_headers_to_add": [{"header": {"key": "x-patched", "value": "1"}}]}


def test_route_configuration_merge_by_port_number() -> None:
    merge = {
        "applyTo": "ROUTE_CONFIGURATION",
        "match": {"routeConfiguration": {"portNumber": 8080}},
        "patch": {"operation": "MERGE", "value": HEADER},
    }
    assert run_routes(merge).response_headers_to_add[0].header.key == "x-patched"
    assert not run_routes(merge, name="9090").response_headers_to_add


def test_gateway_route_names_match_port_and_gateway() -> None:
    by_gateway = {
        "applyTo": "ROUTE_CONFIGURATION",
        "match": {"context": "GATEWAY", "routeConfiguration": {"gateway": "shop/web"}},
        "patch": {"operation": "MERGE", "value": HEADER},
    }
    assert run_routes(by_gateway, name="http.8080", context=GATEWAY).response_headers_to_add
    other = {**by_gateway, "match": {"routeConfiguration": {"gateway": "shop/other"}}}
    assert not run_routes(other, name="http.8080", context=GATEWAY).response_headers_to_add
    https = {
        **by_gateway,
        "match": {"routeConfiguration": {"portNumber": 443, "portName": "https"}},
    }
    config = run_routes(https, name="https.443.https.web.shop", context=GATEWAY)
    assert config.response_headers_to_add


def test_virtual_host_merge_remove_replace_and_add() -> None:
    merged = run_routes(
        {
            "applyTo": "VIRTUAL_HOST",
            "match": {"routeConfiguration": {"vhost": {"name": "a:8080"}}},
            "patch": {"operation": "MERGE", "value": HEADER},
        }
    )
    assert [bool(h.response_headers_to_add) for h in merged.virtual_hosts] == [True, False]
    removed = run_routes(
        {
            "applyTo": "VIRTUAL_HOST",
            "match": {"routeConfiguration": {"vhost": {"domainName": "b"}}},
            "patch": {"operation": "REMOVE"},
        }
    )
    assert [h.name for h in removed.virtual_hosts] == ["a:8080"]
    replaced = run_routes(
        {
            "applyTo": "VIRTUAL_HOST",
            "match": {"routeConfiguration": {"vhost": {"name": "b:8080"}}},
            "patch": {"operation": "REPLACE", "value": {"name": "new", "domains": ["n"]}},
        }
    )
    assert [h.name for h in replaced.virtual_hosts] == ["a:8080", "new"]
    added = run_routes(
        {
            "applyTo": "VIRTUAL_HOST",
            "patch": {"operation": "ADD", "value": {"name": "extra", "domains": ["e"]}},
        }
    )
    assert [h.name for h in added.virtual_hosts] == ["a:8080", "b:8080", "extra"]


NEW_ROUTE = {"name": "new", "match": {"prefix": "/new"}, "direct_response": {"status": 204}}


@pytest.mark.parametrize(
    ("operation", "route", "expected"),
    [
        ("INSERT_BEFORE", {"name": "second"}, ["first", "new", "second"]),
        ("INSERT_AFTER", {"name": "first"}, ["first", "new", "second"]),
        ("INSERT_FIRST", None, ["new", "first", "second"]),
        ("INSERT_BEFORE", None, ["new", "first", "second"]),
        ("INSERT_AFTER", None, ["first", "second", "new"]),
        ("ADD", None, ["first", "second", "new"]),
        ("INSERT_BEFORE", {"name": "absent"}, ["first", "second"]),
    ],
)
def test_http_route_list_operations(
    operation: str, route: dict[str, Any] | None, expected: list[str]
) -> None:
    vhost: dict[str, Any] = {"name": "a:8080"}
    if route is not None:
        vhost["route"] = route
    config = run_routes(
        {
            "applyTo": "HTTP_ROUTE",
            "match": {"routeConfiguration": {"vhost": vhost}},
            "patch": {"operation": operation, "value": NEW_ROUTE},
        }
    )
    assert [r.name for r in config.virtual_hosts[0].routes] == expected


def test_http_route_merge_and_remove_by_action() -> None:
    merged = run_routes(
        {
            "applyTo": "HTTP_ROUTE",
            "match": {"routeConfiguration": {"vhost": {"route": {"name": "second"}}}},
            "patch": {"operation": "MERGE", "value": HEADER},
        }
    )
    assert [bool(r.response_headers_to_add) for r in merged.virtual_hosts[0].routes] == [
        False,
        True,
    ]
    removed = run_routes(
        {
            "applyTo": "HTTP_ROUTE",
            "match": {"routeConfiguration": {"vhost": {"route": {"action": "REDIRECT"}}}},
            "patch": {"operation": "REMOVE"},
        }
    )
    assert [len(h.routes) for h in removed.virtual_hosts] == [2, 0]


def cluster(name: str, **fields: Any) -> Any:
    return ParseDict({"name": name, **fields}, cluster_pb2.Cluster())


def run_clusters(*patches: dict[str, Any], context: int = OUTBOUND) -> list[Any]:
    clusters = [
        cluster("outbound|9080||reviews.shop.svc.cluster.local", connect_timeout="10s"),
        cluster("outbound|9080|v1|reviews.shop.svc.cluster.local", connect_timeout="10s"),
        cluster("BlackHoleCluster"),
    ]
    applied: Applied = set()
    return patch_clusters(clusters, rules(*patches), context, applied)


def test_cluster_merge_by_service_subset_and_port_replaces_durations() -> None:
    merged = run_clusters(
        {
            "applyTo": "CLUSTER",
            "match": {"cluster": {"service": "reviews.shop.svc.cluster.local", "subset": "v1"}},
            "patch": {"operation": "MERGE", "value": {"connect_timeout": "0.5s"}},
        }
    )
    timeouts = [(c.connect_timeout.seconds, c.connect_timeout.nanos) for c in merged]
    assert timeouts == [(10, 0), (0, 500_000_000), (0, 0)]


def test_cluster_name_match_remove_and_add() -> None:
    kept = run_clusters(
        {
            "applyTo": "CLUSTER",
            "match": {"cluster": {"name": "BlackHoleCluster"}},
            "patch": {"operation": "REMOVE"},
        }
    )
    assert "BlackHoleCluster" not in [c.name for c in kept]
    add = {
        "applyTo": "CLUSTER",
        "patch": {"operation": "ADD", "value": {"name": "extra", "type": "STATIC"}},
    }
    assert run_clusters(add)[-1].name == "extra"
    assert "extra" not in [c.name for c in run_clusters(add, context=EnvoyFilter.SIDECAR_INBOUND)]
